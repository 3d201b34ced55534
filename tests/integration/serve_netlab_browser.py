#!/usr/bin/python3
"""braid serve's dashboard in headless Chromium during a live 3-lane transfer
over the netlab (two network namespaces joined by three emulated links).

serve runs in the receiver's namespace, Chromium beside it (over the
DevTools pipe, `ip netns exec`), `braid send --log` in the sender's. The
offer waits and is accepted by a mouse click on the page. While the
transfer runs, two screenshots are taken at two moments (artefacts). Then
the page's throughput chart is read back with JavaScript and checked:

  - one series per path, and exactly the three links' paths;
  - every point's rate matches the sender's --log samples over the same
    window within 5 %. The point carries its window (w, seconds); the
    sender logs each lane's acked bytes every 100 ms, grouped into paths by
    its lane_open lines. The two processes' clocks start at different
    moments, so one offset between them is fitted (and printed); the first
    and last point of a path (ramp-up, end game) are left out.

Then the paths view: a real `braid probe --json` from serve's namespace
(towards a braid recv in the sender's) written into STATE_DIR/probes; the
page shows each link's interface with the report's capacity and idle RTT
(screenshot serve-netlab-paths.png).

serve_netlab_browser.py BRAID NETLAB_EMU ARTEFACT_DIR. Exits 77 and says why
without root, /dev/net/tun, the emulator or Chromium."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from browser_procs import DevTools, DevToolsError, chromium_args, stop_all, wait_until

braid, emu, artefacts = sys.argv[1], sys.argv[2], sys.argv[3]
here = os.path.dirname(os.path.abspath(__file__))
netlab = os.path.join(here, "..", "..", "tools", "netlab", "netlab")


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


if os.geteuid() != 0:
    skip("needs root (network namespaces and TUN devices for the netlab)")
if not os.path.exists("/dev/net/tun"):
    skip("/dev/net/tun is missing (no TUN support here)")
if not os.access(emu, os.X_OK):
    skip("the netlab emulator is missing at " + emu + " (build target netlab-emu)")
chromium = shutil.which("chromium")
if not chromium:
    skip("chromium is not installed (apt install chromium)")
if not shutil.which("ip"):
    skip("iproute2 (ip) is not installed")

W = tempfile.mkdtemp(prefix="braid-serve-netlab.")
prefix = "sn%d" % os.getpid()
lab_env = dict(os.environ, NETLAB_EMU=emu, NETLAB_PREFIX=prefix)
procs = []
# Three links; the slowest still counts ~38 pieces of 64 KiB in a 0.5 s sample, so the
# counting unit is small against the 5 % the points are held to.
LINKS = ["A:rate=80Mbit,delay=2ms,queue=200KB", "B:rate=60Mbit,delay=4ms,queue=150KB",
         "C:rate=40Mbit,delay=6ms,queue=100KB"]
SIZE = 160 << 20  # ~7.5 s at the links' 180 Mbit/s: room for two screenshots 2.5 s apart on a loaded machine
TOLERANCE = 0.05


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    keep = os.path.join(tempfile.gettempdir(), "serve-netlab-failed-%d" % os.getpid())
    os.makedirs(keep, exist_ok=True)  # for whoever debugs it: the log, the chart, the screenshots' moments
    for name in os.listdir(W):
        if name.endswith((".log", ".json", ".out", ".err")):
            shutil.copy(os.path.join(W, name), keep)
    print("logs kept in " + keep, file=sys.stderr)
    for name in ("serve.err", "send.out"):
        p = os.path.join(W, name)
        if os.path.exists(p):
            print("--- " + name + "\n" + open(p, errors="replace").read()[-3000:], file=sys.stderr)
    raise SystemExit(1)


def wait_for(what, pred, timeout=30.0, step=0.1):
    return wait_until(what, pred, fail, timeout, step)


def in_ns(side, *cmd):
    return ["ip", "netns", "exec", "%s-%s" % (prefix, side), *cmd]


def addr(endpoint):
    """'10.77.1.1:4567' -> '10.77.1.1'"""
    return endpoint.rsplit(":", 1)[0].strip("[]")


def log_paths(log_file):
    """The sender's --log: (time of 'sending', {receiver's path label: [(t, bytes)]}) — the label as the
    receiver's dashboard writes it ("RECEIVER_ADDR -> SENDER_ADDR")."""
    lane_path, series, sending = {}, {}, None
    for line in open(log_file):
        e = json.loads(line)
        if e["event"] == "lane_open" and "local" in e and "remote" in e:
            lane_path[e["lane"]] = "%s -> %s" % (addr(e["remote"]), addr(e["local"]))
        elif e["event"] == "status" and e.get("status") == "sending" and sending is None:
            sending = e["t"]
        elif e["event"] == "sample":
            per = {}
            for l in e["lanes"]:
                p = lane_path.get(l["lane"])
                if p:
                    per[p] = per.get(p, 0) + l["bytes"]
            for p, b in per.items():
                series.setdefault(p, []).append((e["t"], b))
    return sending, series


def bytes_at(points, t):
    """A path's acked bytes at time t, linear between the log's samples (None outside them)."""
    if not points or t < points[0][0] or t > points[-1][0]:
        return None
    lo, hi = 0, len(points) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if points[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    (t0, b0), (t1, b1) = points[lo], points[hi]
    return b0 if t1 == t0 else b0 + (b1 - b0) * (t - t0) / (t1 - t0)


def compare(chart, log, offset):
    """Per point: (path, x, chart Mbit/s, log Mbit/s) for points inside the log, first and last left out."""
    out = []
    for ds in chart:
        pts = [p for p in ds["data"] if p.get("w")]
        for p in pts[1:-1]:
            a = bytes_at(log.get(ds["label"], []), p["x"] - p["w"] + offset)
            b = bytes_at(log.get(ds["label"], []), p["x"] + offset)
            if a is None or b is None:
                continue
            out.append((ds["label"], p["x"], p["y"], (b - a) * 8 / 1e6 / p["w"]))
    return out


def error(rows):
    return sum(abs(c - l) for _, _, c, l in rows) / max(1, len(rows))



def shows(text, value, unit, digits):
    """Whether the row's text shows `value` as the page rounds it (JS toFixed and Python's % can differ
    in the last digit on a tie)."""
    return any(abs(float(v) - value) <= 0.51 * 10 ** -digits for v in re.findall(r"(\d+\.\d+) " + unit, text))

try:
    up = subprocess.run([netlab, "up", *sum((["--link", l] for l in LINKS), [])], env=lab_env,
                        capture_output=True, text=True)
    if up.returncode != 0:
        fail("netlab up: " + up.stderr)
    src = os.path.join(W, "big.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(SIZE))
    listen = ", ".join('"10.77.%d.2:7878"' % i for i in (1, 2, 3))
    with open(os.path.join(W, "serve.toml"), "w") as f:
        f.write(f'state_dir = "{W}/state"\n[receive]\nlisten = [{listen}]\ndir = "{W}/dst"\nannounce = false\n'
                '[dashboard]\nlisten = "127.0.0.1:0"\n[accept]\nfrom = "none"\n')
    serve = subprocess.Popen(in_ns("rcv", "env", "XDG_CONFIG_HOME=" + os.path.join(W, "rcfg"), braid, "serve",
                                   "--config", os.path.join(W, "serve.toml"), "--foreground"),
                             stdin=subprocess.DEVNULL, stdout=open(os.path.join(W, "serve.out"), "w"),
                             stderr=open(os.path.join(W, "serve.err"), "w"))
    procs.append(serve)
    out = wait_for("braid serve to start", lambda: "state in" in open(os.path.join(W, "serve.out")).read()
                   and open(os.path.join(W, "serve.out")).read())
    code = re.search(r"^braid: code (\S+) listening", out, re.M).group(1)
    link = re.search(r"dashboard (http://\S+)", out).group(1)

    dt = DevTools(in_ns("rcv", *chromium_args(chromium, os.path.join(W, "profile"), "1280,1700")),
                  os.path.join(W, "chromium.err"))
    procs.append(dt.proc)
    target = dt.call("Target.createTarget", url=link)["targetId"]
    page = dt.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    wait_for("the dashboard", lambda: dt.try_eval(page, "typeof charts === 'object' && !!document.getElementById('offers')"))

    lanes = sum((["--lane", "10.77.%d.1=10.77.%d.2:7878" % (i, i)] for i in (1, 2, 3)), [])
    send = subprocess.Popen(in_ns("snd", "env", "XDG_CONFIG_HOME=" + os.path.join(W, "scfg"), "BRAID_CODE=" + code,
                                  braid, "send", "-q", "--chunk", "64KiB", *lanes, "--log", os.path.join(W, "send.log"),
                                  "--json", os.path.join(W, "send.json"), src, "10.77.1.2:7878"),
                            stdin=subprocess.DEVNULL, stdout=open(os.path.join(W, "send.out"), "w"),
                            stderr=subprocess.STDOUT)
    procs.append(send)
    # The offer waits ([accept] from = "none"): a mouse click on its accept button lets it in.
    wait_for("the offer's accept button on the page",
             lambda: dt.try_eval(page, "!!document.querySelector('button[data-action=accept]')"), timeout=30)
    dt.click(page, "button[data-action=accept]")

    series = ("JSON.stringify(Object.values(charts).flatMap(c => c.rate.data.datasets.map(d => "
              "({label: d.label, data: d.data}))))")
    shots = [os.path.join(artefacts, "serve-netlab-%d.png" % i) for i in (1, 2)]
    wait_for("three paths with two points each in the chart", lambda: (lambda c: len(c) >= 3 and all(
        len([p for p in d["data"] if p["y"] > 0]) >= 2 for d in c))(json.loads(dt.eval(page, series))), timeout=40)
    points_now = lambda: sum(len(d["data"]) for d in json.loads(dt.eval(page, series)))
    progress_now = lambda: dt.eval(page, "document.querySelector('.transfer .bar div').style.width")
    dt.screenshot(page, shots[0])
    moment1 = (points_now(), progress_now())
    first_at = time.time()
    time.sleep(2.5)
    if send.poll() is not None:
        fail("the transfer ended before the second screenshot: make it longer")
    dt.screenshot(page, shots[1])
    moment2 = (points_now(), progress_now())
    if not (moment2[0] > moment1[0] and float(moment2[1].rstrip("%")) > float(moment1[1].rstrip("%"))):
        fail("the page did not move between the screenshots: %s then %s (points, progress)" % (moment1, moment2))
    gap = time.time() - first_at
    if send.wait(timeout=60) != 0:
        fail("braid send exited %d" % send.returncode)
    # The last sample reaches the page within a sampling period or two.
    time.sleep(1.5)
    chart = json.loads(dt.eval(page, series))
    json.dump(chart, open(os.path.join(W, "chart.json"), "w"))

    labels = sorted(d["label"] for d in chart)
    want = sorted("10.77.%d.2 -> 10.77.%d.1" % (i, i) for i in (1, 2, 3))
    if labels != want:
        fail("the chart's series are %s, not one per path %s" % (labels, want))
    sending, log = log_paths(os.path.join(W, "send.log"))
    if sorted(log) != want:
        fail("the sender's log has paths %s, not %s" % (sorted(log), want))
    # The clocks' offset: the sender's log counts from its start, the chart from the receiver's
    # transfer start — which is about when the sender logs 'sending' (both follow the offer's
    # acceptance). Fitted once, over every point, within 0.5 s of that.
    base = sending or 0.0
    span = 50 if sending is not None else 3000
    # The most points inside the log first (a smaller error over fewer points is no better fit), then
    # the smallest mean error.
    def fit(o):
        rows = compare(chart, log, o)
        return (-len(rows), error(rows))
    offset = min((base + k / 100.0 for k in range(-span, span + 1)), key=fit)
    rows = compare(chart, log, offset)
    if len(rows) < 3 * 4:
        fail("only %d chart points could be compared with the log: %s" % (len(rows), chart))
    worst = max(rows, key=lambda r: abs(r[2] - r[3]) / r[3] if r[3] else 1e9)
    for path in want:
        mine = [r for r in rows if r[0] == path]
        if len(mine) < 4:
            fail("the path %s has %d comparable points" % (path, len(mine)))
    bad = [r for r in rows if r[3] <= 0 or abs(r[2] - r[3]) > TOLERANCE * r[3]]
    for path in want:
        mine = [r for r in rows if r[0] == path]
        errs = sorted(abs(c - l) / l * 100 for _, _, c, l in mine if l > 0)
        print("%s: %d points, chart %.1f Mbit/s median, error median %.2f %% max %.2f %%" %
              (path, len(mine), sorted(c for _, _, c, _ in mine)[len(mine) // 2], errs[len(errs) // 2], errs[-1]))
    print("clock offset fitted: %.2f s (sender's 'sending' at %.2f s); screenshots %.1f s apart (%d points at "
          "%s, then %d at %s): %s" % (offset, base, gap, moment1[0], moment1[1], moment2[0], moment2[1],
                                      " ".join(shots)))
    if bad:
        fail("%d of %d points differ from the --log by more than %d %%, e.g. %s (path, t, chart, log in Mbit/s)" %
             (len(bad), len(rows), TOLERANCE * 100, bad[:5]))
    # The comparison has teeth: the same chart with one path 8 % high, or two paths' series swapped,
    # fails it at that offset.
    high = [dict(d, data=[dict(p, y=p["y"] * 1.08) for p in d["data"]]) if d["label"] == want[2] else d for d in chart]
    swapped = [dict(d, label={want[0]: want[1], want[1]: want[0]}.get(d["label"], d["label"])) for d in chart]
    for name, fake in (("8 % high", high), ("swapped", swapped)):
        if not [r for r in compare(fake, log, offset) if abs(r[2] - r[3]) > TOLERANCE * r[3]]:
            fail("a chart %s passes the comparison too: it proves nothing" % name)
    print("chart: 3 series, one per path; %d points within %d %% of the sender's --log (worst %s)" %
          (len(rows), TOLERANCE * 100, worst))

    # The paths view: a real braid probe from serve's side (towards a braid recv in the sender's
    # namespace), its --json in STATE_DIR/probes; the page shows each link's interface with the
    # capacity and idle RTT the report has.
    pcode = "braid-serve-netlab-probe-code"
    plisten = sum((["--listen", "10.77.%d.1:7879" % i] for i in (1, 2, 3)), [])
    precv = subprocess.Popen(in_ns("snd", "env", "XDG_CONFIG_HOME=" + os.path.join(W, "pcfg-recv"), braid, "recv",
                                   "--dir", os.path.join(W, "pdst"), *plisten, "--code", pcode, "--yes",
                                   "--no-announce"), stdin=subprocess.DEVNULL,
                             stdout=open(os.path.join(W, "precv.out"), "w"), stderr=subprocess.STDOUT)
    procs.append(precv)
    wait_for("the probe's receiver", lambda: "listening" in open(os.path.join(W, "precv.out")).read(), timeout=20)
    os.makedirs(os.path.join(W, "state", "probes"), exist_ok=True)
    report_file = os.path.join(W, "state", "probes", "lab.json")
    probe = subprocess.run(in_ns("rcv", "env", "XDG_CONFIG_HOME=" + os.path.join(W, "pcfg-send"), braid, "probe",
                                 "--code", pcode, "--seconds", "0.5", "--size", "64MiB", "--json", report_file,
                                 "10.77.1.1:7879"), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=90)
    if probe.returncode != 0:
        fail("braid probe exited %d: %s" % (probe.returncode, probe.stdout[-1500:] + probe.stderr[-1500:]))
    report = json.load(open(report_file))
    dt.eval(page, "showPaths()")
    shown = json.loads(wait_for("the probed paths in the paths view", lambda: (lambda v: v if v and len(
        json.loads(v)) >= 3 else None)(dt.try_eval(page, "JSON.stringify([...document.querySelectorAll("
                                                         "'#paths tr[data-capacity]')].map(r => ({iface: "
                                                         "r.dataset.iface, capacity: +r.dataset.capacity, "
                                                         "text: [...r.cells].map(c => c.textContent).join(' | ')})))")), timeout=15))
    for rp in report["paths"]:
        mine = [r for r in shown if r["iface"] == rp["interface"]]
        cap = rp["alone"]["mbit_per_second"]
        if not mine or abs(mine[0]["capacity"] - cap) > 1e-6 * cap or not shows(mine[0]["text"], cap, "Mbit/s", 1):
            fail("the paths view shows %s for the probed %s (%s, %.2f Mbit/s)" % (mine, rp["name"], rp["interface"],
                                                                                  cap))
        if rp["idle_rtt_ms"] is not None and not shows(mine[0]["text"], rp["idle_rtt_ms"], "ms", 2):
            fail("the paths view does not show %s's idle RTT %.2f ms: %s" % (rp["interface"], rp["idle_rtt_ms"],
                                                                             mine[0]["text"]))
    if sorted(r["iface"] for r in shown) != ["nl-A", "nl-B", "nl-C"]:
        fail("the paths view's probed interfaces are %s, not the three links" % [r["iface"] for r in shown])
    dt.eval(page, "document.getElementById('paths-view').scrollIntoView()")
    dt.screenshot(page, os.path.join(artefacts, "serve-netlab-paths.png"))
    print("paths view: %s (links 80, 60, 40 Mbit/s)" % ", ".join(
        "%s %.1f Mbit/s idle RTT %.2f ms" % (rp["interface"], rp["alone"]["mbit_per_second"], rp["idle_rtt_ms"] or 0)
        for rp in report["paths"]))
    print("PASS")
except DevToolsError as e:
    fail(str(e))
finally:
    stop_all(procs, W)
    subprocess.run([netlab, "down"], env=lab_env, capture_output=True)
