#!/usr/bin/python3
"""braid serve's dashboard, its send view and paths view, in headless Chromium
(DevTools pipe), on loopback.

Send view: the left pane browses the config's [send] root — the test
clicks into a directory, ticks a file there and a directory at the top —
the right pane gets a braid recv's address and pairing code typed in, and
a click on Send starts a real braid send on the server; the files land in
recv's directory identical, and the page lists the send as done. The view
cannot lead out of its root: '..', an absolute path and a symlink to /etc
are refused by the server, for listing and for sending.

Paths view: a real `braid probe --json` (against serve itself, over
loopback) is written into STATE_DIR/probes; the page then shows, beside the
interface the probe left through, that path's capacity and idle RTT as the
report has them. And the pairing code's QR image decodes (zbarimg) to the
code serve printed.

serve_views_browser.py BRAID [SCREENSHOT.png]. Exits 77 and says why without Chromium."""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from browser_procs import DevTools, DevToolsError, chromium_args, stop_all, wait_until

braid = sys.argv[1]
shot = sys.argv[2] if len(sys.argv) > 2 else None
chromium = shutil.which("chromium")
if not chromium:
    print("SKIP: chromium is not installed (apt install chromium)")
    sys.exit(77)

W = tempfile.mkdtemp(prefix="braid-serve-views.", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
procs = []


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    for name in ("serve.err", "recv.out", "probe.out", "chromium.err"):
        p = os.path.join(W, name)
        if os.path.exists(p):
            print("--- " + name + "\n" + open(p, errors="replace").read()[-3000:], file=sys.stderr)
    for d in ("state/sends",):
        p = os.path.join(W, d)
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith(".out"):
                    print("--- " + f + "\n" + open(os.path.join(p, f), errors="replace").read()[-2000:], file=sys.stderr)
    raise SystemExit(1)


def wait_for(what, pred, timeout=30.0, step=0.1):
    return wait_until(what, pred, fail, timeout, step)


def started(path):
    text = open(path).read()
    return "listening on" in text and text


def digest(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()



def shows(text, value, unit, digits):
    """Whether the row's text shows `value` as the page rounds it (JS toFixed and Python's % can differ
    in the last digit on a tie)."""
    return any(abs(float(v) - value) <= 0.51 * 10 ** -digits for v in re.findall(r"(\d+\.\d+) " + unit, text))

try:
    root = os.path.join(W, "files")
    os.makedirs(os.path.join(root, "photos", "2026"))
    os.makedirs(os.path.join(root, "docs"))
    contents = {"photos/2026/beach.jpg": 3_000_000, "photos/2026/dune.jpg": 1_500_000,
                "docs/notes.txt": 5_000, "docs/plan.pdf": 700_000, "top.bin": 200_000}
    for rel, n in contents.items():
        with open(os.path.join(root, rel), "wb") as f:
            f.write(os.urandom(n))
    os.symlink("/etc", os.path.join(root, "etc-link"))
    state = os.path.join(W, "state")
    with open(os.path.join(W, "serve.toml"), "w") as f:
        f.write(f'state_dir = "{state}"\n[receive]\nlisten = ["127.0.0.1:0"]\ndir = "{W}/dst"\nannounce = false\n'
                f'[dashboard]\nlisten = "127.0.0.1:0"\n[send]\nroots = ["{root}"]\n')
    env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(W, "serve-cfg"))
    env.pop("BRAID_CODE", None)
    serve = subprocess.Popen([braid, "serve", "--config", os.path.join(W, "serve.toml"), "--foreground"], env=env,
                             stdin=subprocess.DEVNULL, stdout=open(os.path.join(W, "serve.out"), "w"),
                             stderr=open(os.path.join(W, "serve.err"), "w"))
    procs.append(serve)
    out = wait_for("braid serve to start", lambda: "state in" in open(os.path.join(W, "serve.out")).read()
                   and open(os.path.join(W, "serve.out")).read())
    serve_port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", out).group(1))
    serve_code = re.search(r"^braid: code (\S+) listening", out, re.M).group(1)
    link = re.search(r"dashboard (http://\S+)", out).group(1)

    # The peer on the other pane: a plain braid recv with a pairing code of its own.
    got = os.path.join(W, "got")
    renv = dict(env, XDG_CONFIG_HOME=os.path.join(W, "recv-cfg"))
    recv = subprocess.Popen([braid, "recv", "--dir", got, "--listen", "127.0.0.1:0", "--yes", "--once",
                             "--no-announce"], env=renv, stdin=subprocess.DEVNULL,
                            stdout=open(os.path.join(W, "recv.out"), "w"), stderr=subprocess.STDOUT)
    procs.append(recv)
    rout = wait_for("braid recv to start", lambda: started(os.path.join(W, "recv.out")))
    recv_port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", rout).group(1))
    recv_code = re.search(r"code (\S+) listening", rout).group(1)

    dt = DevTools(chromium_args(chromium, os.path.join(W, "profile"), "1280,1500"), os.path.join(W, "chromium.err"))
    procs.append(dt.proc)
    target = dt.call("Target.createTarget", url=link)["targetId"]
    page = dt.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    wait_for("the send view's files", lambda: dt.try_eval(page, "!!document.querySelector('#files a[data-dir=photos]')"))

    # The pairing code's QR image on the page decodes (zbarimg) to the code serve printed.
    zbarimg = shutil.which("zbarimg")
    if zbarimg:
        box = json.loads(wait_for("the QR image", lambda: dt.try_eval(page, "(() => { const e = document.querySelector("
                                                                         "'#qr svg'); if (!e) return null; const r = "
                                                                         "e.getBoundingClientRect(); return JSON.stringify("
                                                                         "{x: r.x, y: r.y, width: r.width, height: r.height, "
                                                                         "scale: 1}); })()")))
        png = os.path.join(W, "qr.png")
        data = dt.call("Page.captureScreenshot", page, format="png", clip=box)["data"]
        open(png, "wb").write(base64.b64decode(data))
        decoded = subprocess.run([zbarimg, "--quiet", "--raw", png], capture_output=True, text=True).stdout.strip()
        if decoded != serve_code:
            fail("the QR code decodes to %r, not the pairing code %r" % (decoded, serve_code))
        print("QR code: decodes to the pairing code %s" % serve_code)
    else:
        print("note: zbar-tools is not installed: the QR code is not decoded")

    # Out of the root: refused for listing and for sending, by the server.
    escapes = json.loads(dt.eval(page, """(async () => {
      const list = async (p) => (await (await fetch('/api/files?root=0&path=' + encodeURIComponent(p))).json());
      const send = async (p) => (await (await fetch('/api/send', {method: 'POST', headers: {'X-Braid': '1'},
                                  body: JSON.stringify({root: 0, paths: [p], to: '127.0.0.1:1'})})).json());
      return JSON.stringify({up: await list('..'), abs: await list('/etc'), link: await list('etc-link'),
                             link2: await list('etc-link/ssl'), other: await list('photos/../../'),
                             send_up: await send('../serve.toml'), send_link: await send('etc-link/hostname'),
                             send_abs: await send('/etc/hostname'), root9: await (await fetch('/api/files?root=9&path=')).json()});
    })()"""))
    for k, v in escapes.items():
        if "error" not in v:
            fail("the dashboard let %s out of its root: %s" % (k, v))
    if len(os.listdir(os.path.join(state, "sends")) if os.path.isdir(os.path.join(state, "sends")) else []):
        fail("a refused send still started a process")

    # Browse: into photos/, then 2026/, tick beach.jpg; back to the top, tick docs/ (a directory).
    dt.click(page, "#files a[data-dir=photos]")
    wait_for("photos/2026 in the pane", lambda: dt.try_eval(page, "!!document.querySelector('#files a[data-dir=\"photos/2026\"]')"))
    dt.click(page, "#files a[data-dir=\"photos/2026\"]")
    wait_for("beach.jpg in the pane", lambda: dt.try_eval(page, "!!document.querySelector('#files input[data-path=\"photos/2026/beach.jpg\"]')"))
    dt.click(page, "#files input[data-path=\"photos/2026/beach.jpg\"]")
    dt.click(page, "#crumbs a")  # the root
    wait_for("docs/ in the pane", lambda: dt.try_eval(page, "!!document.querySelector('#files input[data-path=docs]')"))
    dt.click(page, "#files input[data-path=docs]")
    picked = dt.eval(page, "document.getElementById('send-picked').textContent")
    if picked != "photos/2026/beach.jpg, docs":
        fail("the pane's picked files read %r" % picked)
    # The other pane: the peer's address and code, typed.
    for sel, text in (("#send-to", "127.0.0.1:%d" % recv_port), ("#send-code", recv_code)):
        dt.click(page, sel)
        dt.call("Input.insertText", page, text=text)
    dt.click(page, "#send-go")
    state_of = lambda: dt.try_eval(page, "(document.querySelector('#sends tr[data-send]') || {dataset: {}}).dataset.state")
    wait_for("the send to finish on the page", lambda: state_of() in ("done", "failed"), timeout=40)
    if state_of() != "done":
        fail("the send from the dashboard failed: %s" % dt.eval(page, "document.querySelector('#sends tr[data-send]').title"))
    if recv.wait(timeout=20) != 0:
        fail("braid recv exited %d" % recv.returncode)
    for rel in ("photos/2026/beach.jpg", "docs/notes.txt", "docs/plan.pdf"):
        name = os.path.basename(rel) if rel.startswith("photos") else rel
        landed = os.path.join(got, name)
        if not os.path.exists(landed) or digest(landed) != digest(os.path.join(root, rel)):
            fail("%s did not land identical as %s (got %s)" % (rel, name, sorted(os.listdir(got))))
    if os.path.exists(os.path.join(got, "dune.jpg")) or os.path.exists(os.path.join(got, "top.bin")):
        fail("a file not picked was sent")
    print("send view: photos/2026/beach.jpg and docs/ picked by clicks, sent to braid recv, landed identical")

    # Paths view: a real probe's report in STATE_DIR/probes.
    probes = os.path.join(state, "probes")
    os.makedirs(probes, exist_ok=True)
    penv = dict(os.environ, XDG_CONFIG_HOME=os.path.join(W, "probe-cfg"), BRAID_CODE=serve_code)
    p = subprocess.run([braid, "probe", "--seconds", "0.5", "--size", "64MiB", "--json",
                        os.path.join(probes, "self.json"), "127.0.0.1:%d" % serve_port], env=penv,
                       stdin=subprocess.DEVNULL, stdout=open(os.path.join(W, "probe.out"), "w"),
                       stderr=subprocess.STDOUT, timeout=60)
    if p.returncode != 0:
        fail("braid probe exited %d" % p.returncode)
    report = json.load(open(os.path.join(probes, "self.json")))
    dt.eval(page, "showPaths()")
    rows = json.loads(wait_for("a probed path in the paths view", lambda: (lambda v: v if v != "[]" else None)(dt.eval(
        page, "JSON.stringify([...document.querySelectorAll('#paths tr[data-capacity]')].map(r => "
              "({iface: r.dataset.iface, capacity: +r.dataset.capacity, rtt: r.dataset.rtt, remote: r.dataset.remote, "
              "text: [...r.cells].map(c => c.textContent).join(' | ')})))")), timeout=15))
    for rp in report["paths"]:
        mine = [r for r in rows if r["iface"] == rp["interface"] and r["remote"] == rp["remote"]]
        if not mine:
            fail("the probed path %s (%s) is not in the paths view: %s" % (rp["name"], rp["interface"], rows))
        cap = rp["alone"]["mbit_per_second"]
        if abs(mine[0]["capacity"] - cap) > 1e-6 * max(1, cap) or not shows(mine[0]["text"], cap, "Mbit/s", 1):
            fail("the paths view says %s for %s, the probe %.3f Mbit/s" % (mine[0], rp["name"], cap))
        if rp["idle_rtt_ms"] is not None and not shows(mine[0]["text"], rp["idle_rtt_ms"], "ms", 2):
            fail("the paths view does not show the idle RTT %.2f ms: %s" % (rp["idle_rtt_ms"], mine[0]["text"]))
    ifaces = dt.eval(page, "[...document.querySelectorAll('#paths tr[data-iface]')].map(r => r.dataset.iface)")
    if "lo" not in ifaces:
        fail("the paths view lists no loopback interface: %s" % ifaces)
    if shot:
        dt.eval(page, "document.getElementById('send-view').scrollIntoView()")
        dt.screenshot(page, shot)
    print("paths view: %d interfaces; the probe's %s shown with its capacity and idle RTT" %
          (len(set(ifaces)), ", ".join("%s %.1f Mbit/s" % (r["interface"], r["alone"]["mbit_per_second"])
                                       for r in report["paths"])))
    print("PASS")
except DevToolsError as e:
    fail(str(e))
finally:
    stop_all(procs, W)
