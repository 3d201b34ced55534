#!/usr/bin/env python3
"""braid's UDP-lane benchmark on netlab: the figures of issue 5's "What it must show".

Scenarios (each selectable by name; 'all' runs every one, in this order):
  loss1        200 Mbit/s, 20 ms one-way, 1 % random loss (both ways), 2 MB queue:
               braid (one UDP lane) vs iperf3 -C bbr vs iperf3 -C cubic; resent vs lost bytes
  loss5        the same with 5 % loss
  bufferbloat  50 Mbit/s, 10 ms, 2 MB drop-tail queue: ping's added delay while idle, during a
               braid UDP transfer, an iperf3 cubic upload and an iperf3 bbr upload
  yielding     100 Mbit/s, 10 ms, 1 MB queue: braid --background, an iperf3 cubic flow joins
               mid-transfer (its throughput vs solo) and leaves (how fast braid takes the link back);
               the same without --background for contrast
  yielding-tcp the same with braid's TCP lanes (--transport tcp --background: the kernel's TCP under
               braid's pacing cap, SO_MAX_PACING_RATE); the contrast run is plain TCP lanes (bbr)
  fairness     100 Mbit/s, 20 ms, 1 MB queue: two braid UDP transfers started together, each one's share

Every figure is the median of --runs runs (default 3). Outputs in --out (default bench/out/):
udp-SCENARIO.json (every run, every figure, the commands, the method) and a Markdown table, printed
and appended to udp-summary.md, with a pass/fail column against the issue's targets. Targets are
informational: the exit status is 0 when everything was measured, 1 when something could not be
(a failed transfer, a bad checksum, a missing figure), 77 when the lab cannot run here (not root,
no TUN, no iperf3/ping/braid/netlab-emu), with the reason printed.

At its start the bench copies braid and netlab-emu (from $BRAID/$NETLAB_EMU, else --build, $BUILD,
build/) to a private temporary directory and uses only those copies, so a rebuild during the run
cannot change what is measured. The lab uses its own namespace prefix (--prefix, default udpb).
"""
import argparse
import atexit
import datetime
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(REPO, "bench", "netlab"))
import netbench as nb  # noqa: E402  (Lab, Sampler, parse_link, parse_size, iperf_json, sha256, preflight ...)

SKIP = nb.SKIP
MiB = 2 ** 20
SND, RCV = "10.77.1.1", "10.77.1.2"  # link 1 of the lab; nothing else is ever addressed

SCENARIOS = {
    "loss1": {
        "kind": "loss", "link": "X:rate=200Mbit,delay=20ms,loss=1%,queue=2MB", "size": 256 * MiB,
        "iperf_seconds": 12, "rate_factor": 0.9, "bbr_target": True,
        "quick": {"size": 64 * MiB, "iperf_seconds": 5},
        "description": "random loss 1 %: braid UDP lane vs TCP bbr and cubic; resent vs lost bytes",
    },
    "loss5": {
        "kind": "loss", "link": "X:rate=200Mbit,delay=20ms,loss=5%,queue=2MB", "size": 256 * MiB,
        "iperf_seconds": 12, "rate_factor": 0.85, "bbr_target": False,
        "quick": {"size": 64 * MiB, "iperf_seconds": 5},
        "description": "random loss 5 %: braid UDP lane vs TCP bbr and cubic; resent vs lost bytes",
    },
    "bufferbloat": {
        "kind": "bufferbloat", "link": "X:rate=50Mbit,delay=10ms,queue=2MB", "size": 96 * MiB,
        "iperf_seconds": 15, "idle_seconds": 5, "ping_interval": 0.05, "skip_seconds": 2.0,
        "quick": {"size": 32 * MiB, "iperf_seconds": 7, "idle_seconds": 3},
        "description": "ping's added delay through a 2 MB drop-tail queue: idle, braid, iperf3 cubic, iperf3 bbr",
    },
    "yielding": {
        "kind": "yielding", "link": "X:rate=100Mbit,delay=10ms,queue=1MB", "size": 160 * MiB,
        "iperf_seconds": 10, "solo_seconds": 8, "yield_at": 6.0, "contrast": True,
        "quick": {"size": 96 * MiB, "iperf_seconds": 6, "solo_seconds": 5, "yield_at": 3.0},
        "description": "braid --background yields to an iperf3 cubic flow that joins mid-transfer and takes "
                       "the link back when it leaves (and braid without --background, for contrast)",
    },
    "yielding-tcp": {
        "kind": "yielding", "transport": "tcp", "link": "X:rate=100Mbit,delay=10ms,queue=1MB", "size": 160 * MiB,
        "iperf_seconds": 10, "solo_seconds": 8, "yield_at": 6.0, "contrast": True,
        "quick": {"size": 96 * MiB, "iperf_seconds": 6, "solo_seconds": 5, "yield_at": 3.0},
        "description": "braid --background over TCP lanes (kernel TCP under braid's pacing cap) yields to an "
                       "iperf3 cubic flow that joins mid-transfer and takes the link back when it leaves (and "
                       "plain TCP lanes, for contrast)",
    },
    "fairness": {
        "kind": "fairness", "link": "X:rate=100Mbit,delay=20ms,queue=1MB", "size": 96 * MiB,
        "quick": {"size": 32 * MiB},
        "description": "two braid UDP transfers started together on one link: each one's share",
    },
}
# Issue 15's slow uplinks: a deep drop-tail buffer (1.5 s at the link's rate), ping every 50 ms, braid's
# default and its variants beside kernel bbr and cubic. Each variant is (label, lane kind for the report,
# send arguments); no --lane: braid plans its lanes as a user's `braid send` would.
UPLINK_VARIANTS = [
    ("default", "tcp", []),  # the coupled low-delay cap (TcpGroupCap, --latency-target 5ms)
    ("uncoupled", "tcp", ["--latency-target", "0"]),  # each lane's kernel bbr runs free (the default until Dec 3)
    ("lanes1", "tcp", ["--streams", "1"]),
    ("lanes2", "tcp", ["--streams", "2"]),
    ("lanes4", "tcp", ["--streams", "4"]),
    ("udp", "udp", ["--transport", "udp"]),
    ("udp4", "udp", ["--transport", "udp", "--streams", "4"]),
    ("background", "tcp", ["--background"]),
]
for _rate, _size in ((4, 6), (10, 14)):
    SCENARIOS[f"uplink{_rate}"] = {
        "kind": "uplink", "link": f"X:rate={_rate}Mbit,delay=10ms,queue=1500ms",
        "size": _size * MiB, "iperf_seconds": 12, "idle_seconds": 5, "ping_interval": 0.05, "skip_seconds": 2.0,
        "quick": {"size": _size * MiB // 3, "iperf_seconds": 5, "idle_seconds": 3},
        "description": f"a {_rate} Mbit/s uplink with 1.5 s of drop-tail buffer: ping's added delay under braid's "
                       "default, one/two/four TCP lanes, UDP lanes, --background, and iperf3 bbr and cubic",
    }
ORDER = ["loss1", "loss5", "bufferbloat", "yielding", "yielding-tcp", "fairness", "uplink4", "uplink10"]

METHOD = {
    "common": (
        "One emulated link (netlab, link 1: sender 10.77.1.1 in namespace PREFIX-snd, receiver 10.77.1.2 in "
        "PREFIX-rcv). braid: a fresh `braid recv --once --yes --code C --listen 10.77.1.2:PORT` per transfer, "
        "`braid send --lane udp:10.77.1.1=10.77.1.2:PORT` (one UDP lane; the session's TCP control lane runs over "
        "the same link), payload of random bytes in /dev/shm, received file checked with SHA-256. braid's "
        "Mbit/s = file bytes x 8 / `seconds` of the sender's --json report (first to last byte, handshake "
        "excluded). iperf3: server `iperf3 -s -1 -B 10.77.1.2 -J` in the receiver namespace, client in the "
        "sender namespace with -C cubic|bbr; Mbit/s = the receiver's goodput (end.sum_received). Processes "
        "whose start must be dated are launched through `bash -c 'echo $EPOCHREALTIME > STAMP; exec CMD'`, so "
        "braid's log clock (t from its start) and iperf3's start map onto the wall clock to ~1 ms; the emulator's "
        "counters (sampled every 0.1 s by SIGUSR1, dated by its own clock) are mapped onto the wall clock by the "
        "sampling calls' timing. Link Mbit/s from the emulator count IP bytes (headers included)."),
    "loss": (
        "Per run, on one lab: braid (SIZE), then iperf3 -C bbr -t T, then iperf3 -C cubic -t T. The emulator's "
        "counters are read before and after each, so the drops of the data direction (snd->rcv, 'up') belong to "
        "that transfer. link lost bytes = packets the link dropped in the data direction (cause loss+queue+codel+"
        "outage; 'loss' alone is also given) x the mean IP packet size offered in that direction during the "
        "transfer. braid resent = bytes_retransmitted of its UDP lane (file data only, so a perfect recovery gives "
        "a ratio just under 1: lost packets also carried headers and the AEAD tag). iperf3 resent = retransmitted "
        "segments x MSS (tcp_mss_default). Target line: rate x (1 - loss), rate = the link's nominal rate."),
    "bufferbloat": (
        "`ping -n -D -i INTERVAL 10.77.1.2` from the sender namespace (through the same queue as the load). Idle: "
        "IDLE s of ping alone, its median RTT is the base. Then for each load (braid UDP transfer of SIZE, "
        "iperf3 -C cubic -t T, iperf3 -C bbr -t T) ping runs from 1 s before to the end; the samples kept are the "
        "probes *sent* (receive time - RTT) from SKIP s after the load started until it ended (braid: its log's "
        "'sending' to 'verifying'; iperf3: its client start + SKIP .. start + T). Added delay = RTT - idle median; "
        "median/p95/p99 by linear interpolation. Probes without a reply in that window are counted as lost "
        "(not in the percentiles). Load Mbit/s: braid's file rate, iperf3's goodput; link Mbit/s over the ping "
        "window from the emulator (IP bytes)."),
    "uplink": (
        "As bufferbloat, on a slow link with 1.5 s of drop-tail buffer: idle ping, then for each braid variant "
        "(`braid send FILE 10.77.1.2:PORT` with no --lane, so braid plans its lanes as a user's send does, plus "
        "the variant's flags) and iperf3 -C bbr / -C cubic -t T, ping every INTERVAL from 1 s before the load; "
        "probes sent from SKIP s after the load started until it ended count. Mbit/s = file bytes x 8 / the "
        "sender's `seconds`; lanes = the report's lanes of the variant's kind."),
    "yielding": (
        "Solo: iperf3 -C cubic -t SOLO -i 0.5 alone, receiver's mean goodput = solo. Then braid (--background, "
        "and again without it for contrast) sends SIZE; YIELD_AT s after its log says 'sending', iperf3 -C cubic "
        "-t T -i 0.5 starts. Competing flow: the iperf3 server's 0.5 s intervals (relative to the flow's own "
        "start, no clock alignment needed); fraction = mean goodput over a window / solo. 'within 2 s' is judged "
        "on the window [1 s, 2 s] of its life together with its steady mean [2 s, end]; t80 = end of the first "
        "0.5 s interval from which every later interval is >= 0.8 x solo. Taking back: stop = the moment the "
        "iperf3 client exits (~1-2 RTT after its last data); the link's IP throughput (emulator, braid alone then) "
        "over [stop+1 s, stop+2 s] / the link's rate is the judged figure; t90 = time from stop until a 0.5 s window "
        "first reaches 0.9 x rate. A time that did not happen while observed is recorded as "
        "{\"not_reached_within_s\": H} (censored; a median of censored values is censored, shown '> H'). braid's own data rate (acked bytes from its sample log) before/during/after is "
        "given too. yielding-tcp: the same with `braid send --lane tcp:10.77.1.1=10.77.1.2:PORT` (lanes 0 and "
        "1, both TCP, kernel bbr, each under braid's pacing cap with --background); braid's acked bytes are the "
        "kernel's tcpi_bytes_acked of its lanes (frame bytes) from the sample log's `tcp.acked`."),
    "fairness": (
        "Two receivers (ports P and P+1, own config dirs), two senders launched back to back (each dated by its "
        "stamp). Each flow's data over time: the sum of `udp.acked` of its lanes in its sample log (about every "
        "100-200 ms). Overlap = from the later 'sending' to the earlier 'verifying'; share = a flow's acked bytes "
        "over the overlap / both flows' acked bytes over the overlap ('steady': the overlap minus its first 2 s). "
        "Judged: the smaller share, in [0.4, 0.6] (the larger is 1 - it). Jain's index over the two rates."),
}


def log(msg):
    print(f"[udpbench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Failed(Exception):
    """A measurement that could not be made (reported, counted, the bench goes on)."""


# --------------------------------------------------------------------------- small helpers

def percentile(xs, p):
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def cum_at(pts, t):
    """Linear interpolation of a cumulative series [(time, value)] at time t; None outside it."""
    if not pts or t < pts[0][0] - 1e-9 or t > pts[-1][0] + 1e-9:
        return None
    lo, hi = 0, len(pts) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pts[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    (ta, va), (tb, vb) = pts[lo], pts[hi]
    if tb <= ta:
        return vb
    return va + (vb - va) * (min(max(t, ta), tb) - ta) / (tb - ta)


def rate_mbit(pts, a, b):
    """Mbit/s of a cumulative byte series over [a, b]; None if the series does not cover it."""
    if b is None or a is None or b - a <= 1e-6:
        return None
    ca, cb = cum_at(pts, a), cum_at(pts, b)
    if ca is None or cb is None:
        return None
    return (cb - ca) * 8 / (b - a) / 1e6


def ratio(a, b):
    return a / b if a is not None and b else None


def read_stamp(path, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open(path) as f:
                txt = f.read().strip().replace(",", ".")
            if txt:
                return float(txt)
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    raise Failed(f"no start stamp in {path}")


def parse_braid_log(path, t0):
    """braid's --log (JSON lines): status times and the UDP-acked data bytes over time (wall clock)."""
    out = {"sending": None, "verifying": None, "done": None, "cc": None, "pts": [], "caps": [], "restarts": 0}
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            ev, t = e.get("event"), e.get("t")
            if t is None:
                continue
            if ev == "status":
                st = e.get("status")
                if st in ("sending", "verifying") and out[st] is None:
                    out[st] = t0 + t
                elif st == "done":
                    out["done"] = t0 + t
            elif ev == "lane_open" and (e.get("kind") == "udp" or out["cc"] is None):
                out["cc"] = e.get("cc")
            elif ev == "sample":
                # UDP lanes: the transport's acked data; TCP lanes under --background: the kernel's bytes
                # acked; other TCP lanes: the scheduler's acked piece bytes (coarser: whole pieces)
                acked = sum((l.get("udp") or l.get("tcp") or {}).get("acked", l.get("bytes", 0) if not l.get("udp")
                            else 0) for l in e.get("lanes", []))
                out["pts"].append((t0 + t, acked))
                # TCP lanes under --background: the sum of their pacing caps (None while any is uncapped)
                tcp = [l["tcp"] for l in e.get("lanes", []) if l.get("tcp")]
                if tcp:
                    caps = [x.get("cap") for x in tcp]
                    out["caps"].append((t0 + t, None if None in caps else sum(caps)))
            elif ev == "pacing_restart":
                out["restarts"] += 1
    out["end"] = out["verifying"] or out["done"]
    if out["sending"] is not None:
        out["pts"] = [(out["sending"], 0)] + [p for p in out["pts"] if p[0] > out["sending"]]
    return out


PING_RE = re.compile(r"^\[(\d+(?:\.\d+)?)\].*icmp_seq=(\d+).*time=([0-9.]+) ms")


def parse_ping(path):
    """[(send time, seq, rtt ms)] from `ping -D` output (receive time - RTT = send time)."""
    out = []
    with open(path) as f:
        for line in f:
            m = PING_RE.match(line)
            if m:
                rtt = float(m.group(3))
                out.append((float(m.group(1)) - rtt / 1000, int(m.group(2)), rtt))
    return out


def link_delta(s0, s1, direction="up"):
    """What crossed link 1 in one direction between two `netlab stats --json` snapshots."""
    a, b = s0["links"][0][direction], s1["links"][0][direction]
    d = {k: b[k] - a[k] for k in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes")}
    d["drops"] = {k: b["drops"][k] - a["drops"].get(k, 0) for k in b["drops"]}
    d["mean_packet_bytes"] = d["rx_bytes"] / d["rx_packets"] if d["rx_packets"] else None
    d["dropped_packets"] = sum(d["drops"].values())
    mp = d["mean_packet_bytes"] or 0
    d["dropped_bytes"] = d["dropped_packets"] * mp
    d["lost_bytes_loss_only"] = d["drops"].get("loss", 0) * mp
    d["seconds"] = s1["time_s"] - s0["time_s"]
    return d


# --------------------------------------------------------------------------- lab plumbing

class WallSampler(nb.Sampler):
    """netbench's Sampler (the emulator's counters every `interval`), plus a map from the emulator's clock
    to the wall clock: each fast snapshot is bracketed by time.time() before the signal and after the read."""

    def __init__(self, lab, interval=0.1):
        super().__init__(lab, interval)
        self.clock = []

    def _fast_snapshot(self):
        t0 = time.time()
        d = super()._fast_snapshot()
        t1 = time.time()
        if d is not None and "time_s" in d:
            self.clock.append((float(d["time_s"]), t0, t1))
        return d

    def offset(self):
        if not self.clock:
            return None
        lo = max(t0 - ts for ts, t0, _ in self.clock)
        hi = min(t1 - ts for ts, _, t1 in self.clock)
        if lo <= hi:
            return (lo + hi) / 2
        return statistics.median((t0 + t1) / 2 - ts for ts, t0, t1 in self.clock)

    def wall_series(self):
        """[(wall time, cumulative IP bytes delivered snd->rcv on link 1)]."""
        off = self.offset()
        if off is None:
            raise Failed("the emulator's counters could not be dated (no fast snapshot)")
        return sorted((ts + off, c[0][0]) for ts, c in self.snaps.values())


class UdpLab(nb.Lab):
    def __init__(self, link_spec, tools, prefix):
        super().__init__({"links": [nb.parse_link(link_spec)], "cc": None}, tools)
        self.prefix = prefix
        self.env["NETLAB_PREFIX"] = prefix


class Run:
    """One scenario: its lab, its work directory, the commands it ran."""

    def __init__(self, name, sc, args, tools, workroot):
        self.name, self.sc, self.args, self.tools = name, sc, args, tools
        self.link = nb.parse_link(sc["link"])
        self.rate = self.link["rate_bps"]
        self.lab = UdpLab(sc["link"], tools, args.prefix)
        self.work = tempfile.mkdtemp(prefix=f"udpbench-{name}-", dir=workroot)
        self.port = 5300
        self.braid_port = 7900
        self.commands = []
        self.seq = 0
        self.sha = {}

    # ---- processes ----
    def next_port(self):
        self.port += 1
        return self.port

    def next_braid_port(self):
        self.braid_port += 1
        return self.braid_port

    def note(self, side, cmd):
        self.commands.append(f"netlab exec {side} " + shlex.join(str(c) for c in cmd))

    def stamped(self, cmd, stamp):
        return ["bash", "-c", 'echo "$EPOCHREALTIME" > "$0"; exec "$@"', stamp, *cmd]

    def spawn(self, side, cmd, out=None, stamp=None):
        cmd = [str(c) for c in cmd]
        self.note(side, cmd)
        if stamp:
            cmd = self.stamped(cmd, stamp)
        if out:
            with open(out, "w") as f:
                return self.lab.spawn(side, *cmd, stdout=f, stderr=subprocess.STDOUT)
        return self.lab.spawn(side, *cmd)

    def run_cmd(self, side, cmd, timeout, stamp=None):
        cmd = [str(c) for c in cmd]
        self.note(side, cmd)
        if stamp:
            cmd = self.stamped(cmd, stamp)
        return self.lab.run(side, *cmd, timeout=timeout, check=False)

    def interrupt(self, p):
        """SIGINT (ping prints and flushes), then the usual stop."""
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGINT)
                p.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.lab.stop(p)

    def stats(self):
        s = self.lab.stats()
        if s is None:
            raise Failed("netlab stats --json gave nothing")
        return s

    def newdir(self, tag):
        self.seq += 1
        d = os.path.join(self.work, f"{self.seq:02d}-{tag}")
        os.makedirs(d)
        return d

    def keep_logs(self, d):
        keep = os.path.join(self.args.out, "udp-failed", f"{self.name}-{time.strftime('%Y%m%d-%H%M%S')}-"
                            f"{os.path.basename(d)}")
        os.makedirs(keep, exist_ok=True)
        for f in os.listdir(d):
            p = os.path.join(d, f)
            if os.path.isfile(p) and os.path.getsize(p) < 64 * MiB:
                shutil.copy(p, keep)
        return os.path.relpath(keep, REPO)

    # ---- payload ----
    def payload(self, size):
        path = os.path.join(self.work, f"payload-{size}.bin")
        if path not in self.sha:
            with open(path, "wb") as f:
                left = size
                while left:
                    chunk = os.urandom(min(left, 4 * MiB))
                    f.write(chunk)
                    left -= len(chunk)
            self.sha[path] = nb.sha256(path)
        return path

    # ---- iperf3 ----
    def iperf(self, cc, seconds, interval=None):
        d = self.newdir(f"iperf-{cc}")
        port = self.next_port()
        srv = ["iperf3", "-s", "-1", "-p", port, "-B", RCV, "-J"] + (["-i", interval] if interval else [])
        sp = self.spawn("rcv", srv, out=os.path.join(d, "server.json"))
        try:
            time.sleep(0.5)
            cli = ["iperf3", "-c", RCV, "-B", SND, "-p", port, "-J", "-t", seconds, "-C", cc]
            cli += ["-i", interval] if interval else []
            stamp = os.path.join(d, "client.stamp")
            r = self.run_cmd("snd", cli, timeout=seconds + 60, stamp=stamp)
            t_exit = time.time()
            if r.returncode != 0:
                raise Failed(f"iperf3 -C {cc} failed ({r.returncode}): {r.stdout[-400:]} {r.stderr[-400:]}")
            cj = json.loads(r.stdout)
            out = nb.iperf_json(r.stdout)
            out["mss"] = cj.get("start", {}).get("tcp_mss_default") or 1448
            out["congestion"] = cj.get("end", {}).get("sender_tcp_congestion")
            out["start_wall"] = read_stamp(stamp)
            out["exit_wall"] = t_exit
            try:
                sp.wait(15)
            except subprocess.TimeoutExpired:
                pass
            out["intervals"] = []
            try:
                with open(os.path.join(d, "server.json")) as f:
                    sj = json.load(f)
                out["intervals"] = [(i["sum"]["start"], i["sum"]["end"], i["sum"]["bytes"]) for i in sj["intervals"]]
            except (OSError, ValueError, KeyError):
                if interval:
                    raise Failed("iperf3 server gave no interval report")
            return out
        finally:
            self.lab.stop(sp)

    # ---- braid ----
    def braid_start(self, tag, size, background=False, port=None):
        """Starts a receiver and then a sender; returns a handle for braid_finish."""
        d = self.newdir(tag)
        port = port or self.next_braid_port()
        code = f"udpbench-{self.name}-{tag}-{port}"
        b = self.tools["braid"]
        src = self.payload(size)
        h = {"dir": d, "port": port, "size": size, "src": src, "dst": os.path.join(d, "dst"),
             "background": background}
        os.makedirs(h["dst"])
        h["recv"] = self.spawn("rcv", ["env", f"XDG_CONFIG_HOME={d}/cfg-recv", b, "recv", "--dir", h["dst"],
                                       "--listen", f"{RCV}:{port}", "--code", code, "--yes", "--once",
                                       "--json", f"{d}/R.json", "--log", f"{d}/R.log"],
                               out=os.path.join(d, "recv.out"))
        h["code"] = code
        return h

    def braid_send(self, h, extra=(), planned=False):
        """planned: no --lane, braid plans its lanes from the interfaces as a user's send does."""
        d, b = h["dir"], self.tools["braid"]
        kind = h.get("kind") or self.sc.get("transport", "udp")
        cmd = ["env", f"XDG_CONFIG_HOME={d}/cfg-send", b, "send", "--code", h["code"],
               "--json", f"{d}/S.json", "--log", f"{d}/S.log"]
        if not planned:
            cmd += ["--lane", f"{kind}:{SND}={RCV}:{h['port']}"]
        cmd += (["--background"] if h["background"] else []) + list(self.args.send_arg) + list(extra)
        cmd += [h["src"], f"{RCV}:{h['port']}"]
        h["stamp"] = os.path.join(d, "send.stamp")
        h["send"] = self.spawn("snd", cmd, out=os.path.join(d, "send.out"), stamp=h["stamp"])
        h["timeout"] = 90 + 4 * h["size"] * 8 / self.rate
        h["launched"] = time.time()

    def wait_status(self, h, status, timeout=30):
        """Wall time of braid's log status (e.g. 'sending'), waiting for it to appear."""
        t0 = read_stamp(h["stamp"])
        end = time.time() + timeout
        path = os.path.join(h["dir"], "S.log")
        while time.time() < end:
            if os.path.exists(path):
                got = parse_braid_log(path, t0).get(status)
                if got is not None:
                    return got
            if h["send"].poll() is not None:
                break
            time.sleep(0.05)
        raise Failed(f"braid send never reported '{status}' (logs: {self.keep_logs(h['dir'])})")

    def braid_finish(self, h, extra_timeout=0):
        d = h["dir"]
        try:
            try:
                rc = h["send"].wait(max(1, h["timeout"] + extra_timeout - (time.time() - h["launched"])))
            except subprocess.TimeoutExpired:
                self.lab.stop(h["send"])
                raise Failed(f"braid send hung (killed after {h['timeout'] + extra_timeout:.0f} s; "
                             f"logs: {self.keep_logs(d)})")
            if rc == 0:
                try:
                    h["recv"].wait(30)
                except subprocess.TimeoutExpired:
                    pass
            else:
                with open(os.path.join(d, "send.out")) as f:
                    tail = f.read()[-800:]
                raise Failed(f"braid send exited {rc}: {tail.strip()} (logs: {self.keep_logs(d)})")
            with open(os.path.join(d, "S.json")) as f:
                rep = json.load(f)
            got = os.path.join(h["dst"], os.path.basename(h["src"]))
            if not (os.path.exists(got) and nb.sha256(got) == self.sha[h["src"]]):
                raise Failed(f"braid: the received file differs from the source (SHA-256) "
                             f"(logs: {self.keep_logs(d)})")
            kind = h.get("kind") or self.sc.get("transport", "udp")
            lanes = [l for l in rep.get("lanes", []) if l.get("kind") == kind]
            if not lanes:
                raise Failed(f"braid's report has no {kind.upper()} lane (logs: {self.keep_logs(d)})")
            t0 = read_stamp(h["stamp"])
            lg = parse_braid_log(os.path.join(d, "S.log"), t0)
            if self.args.keep_logs:
                log(f"braid logs kept in {self.keep_logs(d)}")
            keys = ("kind", "bytes", "packets_sent", "packets_lost", "packets_retransmitted", "bytes_retransmitted",
                    "wire_bytes", "srtt_ms", "min_rtt_ms", "cc_rate_mbit_per_sec", "rate_mbit_per_sec", "cwnd_bytes",
                    "close_reason",
                    # TCP lanes under --background: the pacing cap at the end (null: none) and its restarts
                    "pacing_cap_mbit_per_sec", "pacing_restarts", "queuing_delay_ms", "kernel_pacing_bytes_per_sec",
                    "segments_retransmitted")
            out = {"seconds": rep["seconds"], "mbit": h["size"] * 8 / rep["seconds"] / 1e6, "identical": True,
                   "wall_seconds": round(time.time() - h["launched"], 3),
                   "stalls": rep.get("stalls"), "cc": lg["cc"], "background": h["background"],
                   "lane": {k: lanes[0].get(k) for k in keys}, f"lanes_{kind}": len(lanes),
                   "log": lg, "start_wall": t0}
            if len(lanes) > 1:
                out["lanes"] = [{"lane_id": l.get("lane_id"), **{k: l.get(k) for k in keys if k in l}} for l in lanes]
            return out
        finally:
            self.lab.stop(h["send"])
            self.lab.stop(h["recv"])
            shutil.rmtree(h["dst"], ignore_errors=True)

    def braid(self, tag, size, background=False):
        h = self.braid_start(tag, size, background)
        time.sleep(0.5)
        self.braid_send(h)
        return self.braid_finish(h)

    # ---- ping ----
    def ping_start(self, tag):
        d = self.newdir(f"ping-{tag}")
        out = os.path.join(d, "ping.txt")
        p = self.spawn("snd", ["ping", "-n", "-D", "-i", self.sc["ping_interval"], RCV], out=out)
        return p, out

    def ping_stop(self, p, out):
        self.interrupt(p)
        return parse_ping(out)


# --------------------------------------------------------------------------- the scenarios

def guarded(run, errors, what, fn):
    """Runs one measurement; a failure is logged and recorded, and the rest of the run goes on."""
    try:
        return fn()
    except (Failed, RuntimeError, subprocess.TimeoutExpired, OSError, ValueError, KeyError, TypeError,
            ZeroDivisionError) as e:
        log(f"{run.name}: {what}: FAILED: {type(e).__name__}: {e}")
        errors.append(f"{what}: {e}")
        return None


def scenario_loss(run, k):
    sc, F, D, errors = run.sc, {}, {}, []
    loss = run.link["loss"]
    T = sc["iperf_seconds"]
    line = run.rate * (1 - loss) / 1e6

    def braid():
        s0 = run.stats()
        r = run.braid("braid", sc["size"])
        s1 = run.stats()
        up = link_delta(s0, s1)
        ln = r["lane"]
        F.update({"braid_mbit": r["mbit"], "braid_seconds": r["seconds"],
                  "braid_over_line": ratio(r["mbit"], line),
                  "braid_over_target": ratio(r["mbit"], sc["rate_factor"] * line),
                  "braid_packets_sent": ln["packets_sent"], "braid_packets_lost": ln["packets_lost"],
                  "braid_packets_resent": ln["packets_retransmitted"], "braid_resent_bytes": ln["bytes_retransmitted"],
                  "link_dropped_packets": up["dropped_packets"], "link_loss_drops": up["drops"].get("loss", 0),
                  "link_queue_drops": up["drops"].get("queue", 0), "link_lost_bytes": up["dropped_bytes"],
                  "braid_resent_over_lost": ratio(ln["bytes_retransmitted"], up["dropped_bytes"]),
                  "braid_resent_over_loss_only": ratio(ln["bytes_retransmitted"], up["lost_bytes_loss_only"]),
                  "braid_resent_pkts_over_dropped_pkts": ratio(ln["packets_retransmitted"], up["dropped_packets"]),
                  "braid_srtt_ms": ln["srtt_ms"], "braid_min_rtt_ms": ln["min_rtt_ms"],
                  "braid_cc_rate_mbit": ln["cc_rate_mbit_per_sec"]})
        r.pop("log")
        D["braid"] = {**r, "link_up": up, "link_down": link_delta(s0, s1, "down")}
        log(f"{run.name} run {k + 1}: braid {r['mbit']:.1f} Mbit/s, resent {ln['bytes_retransmitted']} B vs link "
            f"lost {up['dropped_bytes']:.0f} B ({F['braid_resent_over_lost'] or 0:.2f}x)")

    def tcp(cc):
        s0 = run.stats()
        r = run.iperf(cc, T)
        s1 = run.stats()
        up = link_delta(s0, s1)
        resent = (r["retransmits"] or 0) * r["mss"]
        F.update({f"{cc}_mbit": r["mbit"], f"{cc}_retransmits": r["retransmits"],
                  f"{cc}_link_dropped_packets": up["dropped_packets"], f"{cc}_resent_bytes": resent,
                  f"{cc}_resent_over_lost": ratio(resent, up["dropped_bytes"])})
        D[cc] = {**r, "link_up": up}
        log(f"{run.name} run {k + 1}: iperf3 {cc} {r['mbit']:.1f} Mbit/s, {r['retransmits']} retransmits, "
            f"link dropped {up['dropped_packets']} packets")

    guarded(run, errors, "braid", braid)
    guarded(run, errors, "iperf3 bbr", lambda: tcp("bbr"))
    guarded(run, errors, "iperf3 cubic", lambda: tcp("cubic"))
    F["braid_over_bbr"] = ratio(F.get("braid_mbit"), F.get("bbr_mbit"))
    F["braid_over_cubic"] = ratio(F.get("braid_mbit"), F.get("cubic_mbit"))
    return F, D, errors


def delay_figures(samples, idle, a, b):
    kept = [s for s in samples if a <= s[0] <= b]
    added = [rtt - idle for _, _, rtt in kept]
    out = {"n": len(kept), "added_median_ms": percentile(added, 50), "added_p95_ms": percentile(added, 95),
           "added_p99_ms": percentile(added, 99), "added_max_ms": max(added) if added else None,
           "window_s": b - a}
    if kept:
        seqs = [s[1] for s in kept]
        expected = max(seqs) - min(seqs) + 1
        out["lost"] = expected - len(set(seqs))
        out["loss_fraction"] = out["lost"] / expected
    return out


def idle_ping(run, F, D):
    """Ping alone for the scenario's idle_seconds: its median RTT is the base of 'added delay'."""
    p, out = run.ping_start("idle")
    time.sleep(run.sc["idle_seconds"])
    smp = run.ping_stop(p, out)
    rtts = [s[2] for s in smp[2:]]  # the first probes may meet ARP/neighbour setup
    if len(rtts) < 10:
        raise Failed(f"idle ping: only {len(rtts)} replies")
    F.update({"idle_rtt_median_ms": percentile(rtts, 50), "idle_rtt_p95_ms": percentile(rtts, 95),
              "idle_rtt_p99_ms": percentile(rtts, 99)})
    D["idle"] = {"n": len(rtts), "rtts_ms": rtts}
    return F["idle_rtt_median_ms"]


def ping_under_load(run, k, F, D, base, label, load):
    """Pings while load() runs (it returns Mbit/s, its wall start and end, and details); the probes sent
    from skip_seconds after its start count. Figures go into F and D under `label`."""
    skip = run.sc["skip_seconds"]
    p, out = run.ping_start(label)
    try:
        time.sleep(1.0)
        with WallSampler(run.lab) as smp:
            mbit, a, b, extra = load()
    finally:
        samples = run.ping_stop(p, out)
    pts = smp.wall_series()
    fig = delay_figures(samples, base, a + skip, b)
    if fig["n"] < 20:
        raise Failed(f"{label}: only {fig['n']} ping replies while the load ran ({b - a:.1f} s)")
    F.update({f"{label}_mbit": mbit, f"{label}_link_mbit": rate_mbit(pts, a + skip, b),
              f"{label}_added_median_ms": fig["added_median_ms"], f"{label}_added_p95_ms": fig["added_p95_ms"],
              f"{label}_added_p99_ms": fig["added_p99_ms"], f"{label}_ping_loss": fig.get("loss_fraction")})
    D[label] = {**fig, **extra, "load_window_wall": [a, b],
                "rtts_ms": [round(s[2], 3) for s in samples if a + skip <= s[0] <= b]}
    log(f"{run.name} run {k + 1}: {label} {mbit:.2f} Mbit/s, added delay median {fig['added_median_ms']:.1f} "
        f"p95 {fig['added_p95_ms']:.1f} p99 {fig['added_p99_ms']:.1f} ms ({fig['n']} probes)")


def iperf_load(run, cc, seconds):
    """A load for ping_under_load: iperf3 -C cc for `seconds`."""
    def go():
        r = run.iperf(cc, seconds)
        return r["mbit"], r["start_wall"], r["start_wall"] + seconds, {"iperf3": r}
    return go


def scenario_bufferbloat(run, k):
    sc, F, D, errors = run.sc, {}, {}, []
    T = sc["iperf_seconds"]

    base = guarded(run, errors, "idle ping", lambda: idle_ping(run, F, D))
    if base is None:
        return F, D, errors
    log(f"{run.name} run {k + 1}: idle RTT median {base:.2f} ms")

    def under(label, load):
        ping_under_load(run, k, F, D, base, label, load)

    def braid_load():
        h = run.braid_start("braid", sc["size"])
        time.sleep(0.5)
        run.braid_send(h)
        r = run.braid_finish(h)
        lg = r.pop("log")
        if lg["sending"] is None or lg["end"] is None:
            raise Failed("braid's log lacks 'sending'/'verifying'")
        return r["mbit"], lg["sending"], lg["end"], {"braid": r}

    guarded(run, errors, "braid under ping", lambda: under("braid", braid_load))
    guarded(run, errors, "iperf3 cubic under ping", lambda: under("cubic", iperf_load(run, "cubic", T)))
    guarded(run, errors, "iperf3 bbr under ping", lambda: under("bbr", iperf_load(run, "bbr", T)))
    F["braid_over_rate"] = ratio(F.get("braid_mbit"), run.rate / 1e6)
    return F, D, errors


def scenario_uplink(run, k):
    """bufferbloat's method, for braid's default and each variant in UPLINK_VARIANTS."""
    sc, F, D, errors = run.sc, {}, {}, []
    T = sc["iperf_seconds"]

    base = guarded(run, errors, "idle ping", lambda: idle_ping(run, F, D))
    if base is None:
        return F, D, errors
    log(f"{run.name} run {k + 1}: idle RTT median {base:.2f} ms")

    def under(label, load):
        ping_under_load(run, k, F, D, base, label, load)

    def braid_load(tag, kind, args):
        def go():
            h = run.braid_start(f"braid-{tag}", sc["size"])
            h["kind"] = kind
            time.sleep(0.5)
            run.braid_send(h, extra=args, planned=True)
            r = run.braid_finish(h)
            lg = r.pop("log")
            if lg["sending"] is None or lg["end"] is None:
                raise Failed("braid's log lacks 'sending'/'verifying'")
            r["lanes_used"] = r.get(f"lanes_{kind}")
            return r["mbit"], lg["sending"], lg["end"], {"braid": r}
        return go

    for tag, kind, args in UPLINK_VARIANTS:
        if run.args.variants and tag not in run.args.variants:
            continue
        guarded(run, errors, f"braid {tag} under ping", lambda: under(tag, braid_load(tag, kind, args)))
        if f"{tag}_mbit" in F:
            F[f"{tag}_lanes"] = D[tag]["braid"].get("lanes_used")
            F[f"{tag}_over_rate"] = ratio(F[f"{tag}_mbit"], run.rate / 1e6)
    guarded(run, errors, "iperf3 bbr under ping", lambda: under("bbr", iperf_load(run, "bbr", T)))
    guarded(run, errors, "iperf3 cubic under ping", lambda: under("cubic", iperf_load(run, "cubic", T)))
    return F, D, errors


def iperf_window(intervals, a, b):
    """Mean Mbit/s of the iperf3 server's intervals inside [a, b] (seconds of the flow's life; the
    intervals overlapping the edges count by the part inside)."""
    got, span = 0.0, 0.0
    for s, e, nbytes in intervals:
        lo, hi = max(s, a), min(e, b)
        if hi > lo and e > s:
            got += nbytes * (hi - lo) / (e - s)
            span += hi - lo
    return got * 8 / span / 1e6 if span > 0 else None


def scenario_yielding(run, k):
    sc, F, D, errors = run.sc, {}, {}, []
    link_mbit = run.rate / 1e6

    def solo():
        r = run.iperf("cubic", sc["solo_seconds"], interval=0.5)
        F["solo_mbit"] = r["mbit"]
        D["solo"] = r
        log(f"{run.name} run {k + 1}: iperf3 cubic alone {r['mbit']:.1f} Mbit/s")
        return r["mbit"]

    solo_mbit = guarded(run, errors, "iperf3 solo", solo)
    if not solo_mbit:
        return F, D, errors

    def one(mode):
        p = "bg" if mode == "background" else "fg"
        h = run.braid_start(f"braid-{mode}", sc["size"], background=(mode == "background"))
        time.sleep(0.5)
        ip = None
        with WallSampler(run.lab) as smp:
            run.braid_send(h)
            err = None
            try:
                sending = run.wait_status(h, "sending")
                # iperf() waits 0.5 s for its server before the client starts
                time.sleep(max(0.0, sending + sc["yield_at"] - 0.5 - time.time()))
                if h["send"].poll() is not None:
                    raise Failed(f"braid ({mode}) finished before the competing flow started: use a larger --size")
                ip = run.iperf("cubic", sc["iperf_seconds"], interval=0.5)
            except (Failed, RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
                err = e  # braid is still let finish (and checked) below
            r = run.braid_finish(h, extra_timeout=sc["iperf_seconds"] + 30)
            if err is not None:
                raise err
        lg = r.pop("log")
        pts = smp.wall_series()
        iv = ip["intervals"]
        life = iv[-1][1] if iv else sc["iperf_seconds"]
        start, stop, bend = ip["start_wall"], ip["exit_wall"], lg["end"]
        # the competing flow, relative to its own start
        first2 = iperf_window(iv, 0, 2)
        w12 = iperf_window(iv, 1, 2)
        steady = iperf_window(iv, 2, min(life, sc["iperf_seconds"]))
        t80 = None
        full = [x for x in iv if x[1] - x[0] > 0.25]
        for j in range(len(full)):
            if all(x[2] * 8 / (x[1] - x[0]) / 1e6 >= 0.8 * solo_mbit for x in full[j:]):
                t80 = full[j][1]
                break
        if t80 is None and full:  # never held 0.8 x solo: censored at the flow's life
            t80 = {"not_reached_within_s": round(full[-1][1], 2)}
        # braid taking the link back (the emulator's counters; braid alone on the link after stop)
        after = {}
        for a, b in ((0, 1), (1, 2), (0, 2), (2, 4)):
            if bend is not None and stop + b <= bend + 0.05:
                after[(a, b)] = rate_mbit(pts, stop + a, stop + b)
            else:
                after[(a, b)] = None
        t90 = None
        tau = 0.0
        while bend is not None and stop + tau + 0.5 <= bend and tau <= 6:
            m = rate_mbit(pts, stop + tau, stop + tau + 0.5)
            if m is not None and m >= 0.9 * link_mbit:
                t90 = tau + 0.5
                break
            tau += 0.1
        if t90 is None and bend is not None and bend - stop >= 2:  # not reached while braid was observed
            t90 = {"not_reached_within_s": round(min(bend - stop, 6.5), 2)}
        bp = lg["pts"]
        before = rate_mbit(bp, lg["sending"] + 2, start) if start - lg["sending"] > 2.5 else \
            rate_mbit(bp, lg["sending"] + 0.5, start)
        during = rate_mbit(bp, start + 2, stop)
        braid_after12 = rate_mbit(bp, stop + 1, stop + 2) if bend and stop + 2 <= bend else None
        if lg["caps"]:  # TCP lanes: braid's pacing caps while the flow ran, and its restarts after
            during_caps = [c for t, c in lg["caps"] if start + 2 <= t <= stop]
            m = statistics.median([(c if c is not None else float("inf")) for c in during_caps]) if during_caps else None
            F[f"{p}_tcp_cap_mbit_during_median"] = m * 8 / 1e6 if m is not None and m != float("inf") else None
            F[f"{p}_tcp_pacing_restarts"] = lg["restarts"]
        F.update({
            f"{p}_competing_mbit": ip["mbit"],
            f"{p}_competing_frac_0_2": ratio(first2, solo_mbit), f"{p}_competing_frac_1_2": ratio(w12, solo_mbit),
            f"{p}_competing_frac_steady": ratio(steady, solo_mbit), f"{p}_competing_t80_s": t80,
            f"{p}_link_frac_after_0_1": ratio(after[(0, 1)], link_mbit),
            f"{p}_link_frac_after_1_2": ratio(after[(1, 2)], link_mbit),
            f"{p}_link_frac_after_0_2": ratio(after[(0, 2)], link_mbit),
            f"{p}_link_frac_after_2_4": ratio(after[(2, 4)], link_mbit),
            f"{p}_braid_t90_after_stop_s": t90,
            f"{p}_braid_data_mbit_before": before, f"{p}_braid_data_mbit_during": during,
            f"{p}_braid_data_mbit_after_1_2": braid_after12,
            f"{p}_link_mbit_during": rate_mbit(pts, start + 2, stop),
            f"{p}_braid_mbit": r["mbit"], f"{p}_braid_seconds": r["seconds"],
        })
        # a time series (0.25 s bins, t = 0 at braid's 'sending') for the JSON and the plot
        t0 = lg["sending"]
        series = []
        t = 0.0
        while t0 + t + 0.25 <= (bend or t0):
            a, b = t0 + t, t0 + t + 0.25
            it = iperf_window(iv, a - start, b - start) if start <= a and b <= stop else 0.0
            series.append([round(t + 0.25, 2), rate_mbit(pts, a, b), rate_mbit(bp, a, b), it])
            t += 0.25
        D[mode] = {"braid": r, "iperf3": ip, "iperf_start_s": start - t0, "iperf_stop_s": stop - t0,
                   "braid_end_s": (bend - t0) if bend else None,
                   "series_columns": ["t_s", "link_ip_mbit", "braid_data_mbit", "iperf3_mbit"], "series": series}
        if bend is not None and stop + 2 > bend:
            raise Failed(f"braid ({mode}) ended {bend - stop:.1f} s after the competing flow: too early to judge "
                         f"the take-back (use a larger --size)")
        log(f"{run.name} run {k + 1}: {mode}: competing {ip['mbit']:.1f} Mbit/s, [0,2] s "
            f"{F[f'{p}_competing_frac_0_2'] or 0:.2f}, [1,2] s {F[f'{p}_competing_frac_1_2'] or 0:.2f}, "
            f"steady {F[f'{p}_competing_frac_steady'] or 0:.2f} of solo; link after stop [1,2] s "
            f"{F[f'{p}_link_frac_after_1_2'] or 0:.2f}, t90 {fmt(t90, 1)} s")

    guarded(run, errors, "braid --background + iperf3", lambda: one("background"))
    if sc["contrast"]:
        guarded(run, errors, "braid (no --background) + iperf3", lambda: one("default"))
    return F, D, errors


def scenario_fairness(run, k):
    sc, F, D, errors = run.sc, {}, {}, []

    def go():
        ha = run.braid_start("braid-a", sc["size"])
        hb = run.braid_start("braid-b", sc["size"])
        time.sleep(0.5)
        with WallSampler(run.lab) as smp:
            run.braid_send(ha)
            run.braid_send(hb)
            done, errs = [], []
            for h in (ha, hb):
                try:
                    done.append(run.braid_finish(h))
                except Failed as e:
                    errs.append(str(e))
            if errs:
                raise Failed("; ".join(errs))
            ra, rb = done
        la, lb = ra.pop("log"), rb.pop("log")
        pts = smp.wall_series()
        a = max(la["sending"], lb["sending"])
        b = min(la["end"], lb["end"], la["pts"][-1][0], lb["pts"][-1][0])  # the logs' last samples
        if b - a < 1.0:
            raise Failed(f"the two transfers overlapped only {b - a:.2f} s")
        ma, mb = rate_mbit(la["pts"], a, b), rate_mbit(lb["pts"], a, b)
        sa = rate_mbit(la["pts"], a + 2, b) if b - a > 4 else None
        sb = rate_mbit(lb["pts"], a + 2, b) if b - a > 4 else None
        share_a = ma / (ma + mb)
        steady_a = sa / (sa + sb) if sa is not None and sb is not None and sa + sb > 0 else None
        F.update({"a_mbit": ra["mbit"], "b_mbit": rb["mbit"], "a_seconds": ra["seconds"], "b_seconds": rb["seconds"],
                  "overlap_s": b - a, "a_overlap_mbit": ma, "b_overlap_mbit": mb,
                  "share_a": share_a, "share_b": 1 - share_a, "min_share": min(share_a, 1 - share_a),
                  "min_share_steady": min(steady_a, 1 - steady_a) if steady_a is not None else None,
                  "jain": (ma + mb) ** 2 / (2 * (ma * ma + mb * mb)),
                  "link_util_overlap": ratio(rate_mbit(pts, a, b), run.rate / 1e6),
                  "start_skew_s": abs(la["sending"] - lb["sending"])})
        t0 = min(la["sending"], lb["sending"])
        end = max(la["end"], lb["end"])
        series, t = [], 0.0
        while t0 + t + 0.5 <= end:
            x, y = t0 + t, t0 + t + 0.5
            series.append([round(t + 0.5, 2), rate_mbit(pts, x, y), rate_mbit(la["pts"], x, y) or 0.0,
                           rate_mbit(lb["pts"], x, y) or 0.0])
            t += 0.5
        D.update({"a": ra, "b": rb, "overlap_wall": [a, b],
                  "series_columns": ["t_s", "link_ip_mbit", "a_data_mbit", "b_data_mbit"], "series": series})
        log(f"{run.name} run {k + 1}: a {ra['mbit']:.1f} / b {rb['mbit']:.1f} Mbit/s; over the {b - a:.1f} s overlap "
            f"a {ma:.1f} b {mb:.1f} Mbit/s: shares {share_a:.3f} / {1 - share_a:.3f}")

    guarded(run, errors, "two braid transfers", go)
    return F, D, errors


KINDS = {"loss": scenario_loss, "bufferbloat": scenario_bufferbloat, "yielding": scenario_yielding,
         "fairness": scenario_fairness, "uplink": scenario_uplink}


# --------------------------------------------------------------------------- rows, targets, output

def rows_for(name, sc, link):
    """(key, label, decimals, target text or None, check(v, medians) or None)."""
    rate = link["rate_bps"] / 1e6
    kind = sc["kind"]
    if kind == "loss":
        loss = link["loss"]
        tgt = sc["rate_factor"] * rate * (1 - loss)
        return [
            ("braid_mbit", "braid, one UDP lane: file data Mbit/s", 1,
             f"≥ {tgt:.1f} ({sc['rate_factor']:g} × {rate:g} × {1 - loss:g})", lambda v, M: v >= tgt - 1e-9),
            ("braid_over_target", "braid ÷ that target", 3, "≥ 1", lambda v, M: v >= 1),
            ("braid_over_line", f"braid ÷ ({rate:g} × (1 − {loss:g}))", 3, None, None),
            ("bbr_mbit", "iperf3 -C bbr Mbit/s", 1, None, None),
            ("braid_over_bbr", "braid ÷ bbr (same run)", 2,
             "≥ 1" if sc["bbr_target"] else None, (lambda v, M: v >= 1) if sc["bbr_target"] else None),
            ("cubic_mbit", "iperf3 -C cubic Mbit/s", 2, None, None),
            ("braid_resent_bytes", "braid resent (data bytes)", 0, None, None),
            ("link_lost_bytes", "link lost in the data direction (bytes, all drops)", 0, None, None),
            ("braid_resent_over_lost", "braid resent ÷ link lost", 3, "≤ 1.2", lambda v, M: v <= 1.2),
            ("braid_resent_pkts_over_dropped_pkts", "braid resent packets ÷ link dropped packets", 3, None, None),
            ("link_queue_drops", "link queue drops (packets) during braid", 0, None, None),
            ("braid_packets_lost", "braid: packets it declared lost", 0, None, None),
            ("bbr_retransmits", "bbr: retransmitted segments", 0, None, None),
            ("bbr_resent_over_lost", "bbr resent ÷ link lost", 2, None, None),
            ("cubic_retransmits", "cubic: retransmitted segments", 0, None, None),
            ("cubic_resent_over_lost", "cubic resent ÷ link lost", 2, None, None),
            ("braid_srtt_ms", "braid srtt (ms)", 2, None, None),
            ("braid_min_rtt_ms", "braid min rtt (ms)", 2, None, None),
        ]
    if kind == "bufferbloat":
        rows = [("idle_rtt_median_ms", "idle ping RTT median (ms)", 2, None, None),
                ("idle_rtt_p99_ms", "idle ping RTT p99 (ms)", 2, None, None),
                ("braid_mbit", "braid UDP: file data Mbit/s", 1, f"≥ {0.9 * rate:g} (0.9 × {rate:g})",
                 lambda v, M: v >= 0.9 * rate),
                ("braid_link_mbit", "braid: link Mbit/s (IP bytes) while pinged", 1, None, None),
                ("braid_added_median_ms", "braid: added delay median (ms)", 2, "≤ 3 and ≤ bbr's",
                 lambda v, M: v <= 3 and (M.get("bbr_added_median_ms") is None or v <= M["bbr_added_median_ms"])),
                ("braid_added_p95_ms", "braid: added delay p95 (ms)", 2, "≤ 8 and ≤ bbr's",
                 lambda v, M: v <= 8 and (M.get("bbr_added_p95_ms") is None or v <= M["bbr_added_p95_ms"])),
                ("braid_added_p99_ms", "braid: added delay p99 (ms)", 2, "≤ 20", lambda v, M: v <= 20),
                ("braid_ping_loss", "braid: ping probes lost", 3, None, None)]
        for cc in ("cubic", "bbr"):
            rows += [(f"{cc}_mbit", f"iperf3 -C {cc}: Mbit/s", 1, None, None),
                     (f"{cc}_link_mbit", f"{cc}: link Mbit/s (IP bytes) while pinged", 1, None, None),
                     (f"{cc}_added_median_ms", f"{cc}: added delay median (ms)", 1, None, None),
                     (f"{cc}_added_p95_ms", f"{cc}: added delay p95 (ms)", 1, None, None),
                     (f"{cc}_added_p99_ms", f"{cc}: added delay p99 (ms)", 1, None, None),
                     (f"{cc}_ping_loss", f"{cc}: ping probes lost", 3, None, None)]
        return rows
    if kind == "uplink":
        rows = [("idle_rtt_median_ms", "idle ping RTT median (ms)", 2, None, None)]
        targets = {"default": (10, 30), "background": (5, 15), "lanes1": (10, 30), "lanes2": (10, 30),
                   "lanes4": (10, 30), "udp": (10, 30), "udp4": (10, 30)}
        names = {"default": "braid, default flags (coupled cap, 5 ms)", "uncoupled": "braid --latency-target 0 (no coupled cap)",
                 "lanes1": "braid --streams 1", "lanes2": "braid --streams 2", "lanes4": "braid --streams 4", "udp": "braid --transport udp",
                 "udp4": "braid --transport udp --streams 4", "background": "braid --background",
                 "bbr": "iperf3 -C bbr", "cubic": "iperf3 -C cubic"}
        for tag in [v[0] for v in UPLINK_VARIANTS] + ["bbr", "cubic"]:
            p50, p95 = targets.get(tag, (None, None))
            rows.append((f"{tag}_mbit", f"{names[tag]}: Mbit/s", 2,
                         f"≥ {0.9 * rate:.2f} (0.9 × link)" if tag == "default" else None,
                         (lambda v, M: v >= 0.9 * rate) if tag == "default" else None))
            if tag in targets:
                rows.append((f"{tag}_lanes", f"{names[tag]}: lanes", 0, None, None))
            rows += [(f"{tag}_added_median_ms", f"{names[tag]}: added delay p50 (ms)", 1,
                      f"≤ {p50}" if p50 else None, (lambda v, M, t=p50: v <= t) if p50 else None),
                     (f"{tag}_added_p95_ms", f"{names[tag]}: added delay p95 (ms)", 1,
                      f"≤ {p95}" if p95 else None, (lambda v, M, t=p95: v <= t) if p95 else None),
                     (f"{tag}_added_p99_ms", f"{names[tag]}: added delay p99 (ms)", 1, None, None)]
        return rows
    if kind == "yielding":
        rows = [("solo_mbit", "iperf3 -C cubic alone: Mbit/s", 1, None, None)]
        for p, what, judged in (("bg", "braid --background", True), ("fg", "braid (default cc)", False)):
            if p == "fg" and not sc["contrast"]:
                continue
            rows += [
                (f"{p}_competing_frac_0_2", f"{what}: competing flow, [0, 2] s ÷ solo", 2, None, None),
                (f"{p}_competing_frac_1_2", f"{what}: competing flow, [1, 2] s ÷ solo", 2,
                 "≥ 0.8" if judged else None, (lambda v, M: v >= 0.8) if judged else None),
                (f"{p}_competing_frac_steady", f"{what}: competing flow, [2 s, end] ÷ solo", 2,
                 "≥ 0.8" if judged else None, (lambda v, M: v >= 0.8) if judged else None),
                (f"{p}_competing_t80_s", f"{what}: competing flow ≥ 0.8 × solo from (s)", 1,
                 "≤ 2" if judged else None, (lambda v, M: v <= 2) if judged else None),
                (f"{p}_braid_data_mbit_before", f"{what}: braid data Mbit/s before the flow", 1, None, None),
                (f"{p}_braid_data_mbit_during", f"{what}: braid data Mbit/s while it runs", 1, None, None),
                (f"{p}_link_frac_after_0_1", f"{what}: link use after it stops, [0, 1] s", 2, None, None),
                (f"{p}_link_frac_after_1_2", f"{what}: link use after it stops, [1, 2] s", 2,
                 "≥ 0.9" if judged else None, (lambda v, M: v >= 0.9) if judged else None),
                (f"{p}_link_frac_after_2_4", f"{what}: link use after it stops, [2, 4] s", 2, None, None),
                (f"{p}_braid_t90_after_stop_s", f"{what}: time to 0.9 of the link after it stops (s)", 2,
                 "≤ 2" if judged else None, (lambda v, M: v <= 2) if judged else None),
                (f"{p}_braid_mbit", f"{what}: whole transfer, file data Mbit/s", 1, None, None)]
        if sc.get("transport") == "tcp":
            rows += [("bg_tcp_cap_mbit_during_median", "braid --background: its TCP lanes' summed pacing cap "
                      "while the flow runs, median (Mbit/s)", 2, None, None),
                     ("bg_tcp_pacing_restarts", "braid --background: kernel start-up restarts (pacing_restart)",
                      0, None, None)]
        return rows
    if kind == "fairness":
        return [("a_mbit", "braid a: file data Mbit/s (whole transfer)", 1, None, None),
                ("b_mbit", "braid b: file data Mbit/s (whole transfer)", 1, None, None),
                ("overlap_s", "both running (s)", 2, None, None),
                ("share_a", "a's share while both run", 3, "0.4–0.6", lambda v, M: 0.4 <= v <= 0.6),
                ("share_b", "b's share while both run", 3, "0.4–0.6", lambda v, M: 0.4 <= v <= 0.6),
                ("min_share", "smaller share (per run, then median)", 3, "≥ 0.4", lambda v, M: v >= 0.4),
                ("min_share_steady", "smaller share, overlap minus its first 2 s", 3, None, None),
                ("jain", "Jain's fairness index", 3, None, None),
                ("link_util_overlap", "link use while both run (IP bytes ÷ rate)", 3, None, None)]
    return []


def medians(runs):
    keys = []
    for r in runs:
        for key in r["figures"]:
            if key not in keys:
                keys.append(key)
    M = {}
    for key in keys:
        vals = [r["figures"].get(key) for r in runs]
        # a censored figure ({"not_reached_within_s": H}: a time that did not happen within H s) sorts as +inf
        cens = [v["not_reached_within_s"] for v in vals if isinstance(v, dict) and "not_reached_within_s" in v]
        vals = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        vals += [float("inf")] * len(cens)
        m = statistics.median(vals) if vals else None
        M[key] = {"not_reached_within_s": min(cens)} if m == float("inf") else m
    return M


def fmt(v, d):
    if v is None:
        return "—"
    if isinstance(v, dict):
        return f"> {v['not_reached_within_s']:.1f} (not reached)"
    if d == 0:
        return f"{v:,.0f}".replace(",", " ")
    return f"{v:.{d}f}"


def table(res):
    L = res["link_parsed"]
    head = (f"### udp {res['scenario']} — {L['rate_bps'] / 1e6:g} Mbit/s, {L['delay_s'] * 1e3:g} ms one-way"
            + (f", {L['loss'] * 100:g} % loss" if L["loss"] else "") + f", queue {L['queue']}")
    sub = (f"{res['description']}. Medians of {res['runs']} run(s); {res['started']}; load at start "
           f"{res['load_avg_at_start'][0]:.2f}; braid {res['binaries']['braid']['sha256'][:12]} "
           f"(built {res['binaries']['braid']['source_mtime']}); settings {json.dumps(res['settings'])}")
    out = [head, "", sub, "", "| figure | median | runs | target | pass |", "|---|---|---|---|---|"]
    for row in res["table_rows"]:
        out.append(f"| {row['label']} | {row['median']} | {row['runs']} | {row['target'] or ''} | {row['pass']} |")
    if res["errors"]:
        out += ["", "Not measured / failed: " + "; ".join(res["errors"])]
    return "\n".join(out) + "\n"


def evaluate(res, rows):
    M = res["medians"]
    tr = []
    for key, label, d, target, check in rows:
        v = M.get(key)
        vals = [r["figures"].get(key) for r in res["runs_detail"]]
        runs = ", ".join(fmt(x, d) if isinstance(x, (int, float, dict)) else "—" for x in vals)
        if check is None:
            ok = ""
        elif v is None:
            ok = "not measured"
        elif isinstance(v, dict):  # censored: the time targets are upper bounds, so a time never reached fails
            ok = "**no**"
        else:
            ok = "yes" if check(v, M) else "**no**"
        tr.append({"key": key, "label": label, "median": fmt(v, d), "median_value": v, "runs": runs,
                   "target": target, "pass": ok})
    res["table_rows"] = tr
    res["targets"] = [{"figure": t["key"], "label": t["label"], "target": t["target"], "median": t["median_value"],
                       "pass": t["pass"] == "yes"} for t in tr if t["target"]]


def plot(res, outdir):
    """Optional PNG (gnuplot) of the yielding and fairness series of the first good run."""
    if not shutil.which("gnuplot"):
        return []
    made = []
    kind = res["kind"]
    for r in res["runs_detail"]:
        D = r["detail"]
        jobs = []
        if kind == "yielding":
            for mode in ("background", "default"):
                if (D.get(mode) or {}).get("series"):
                    jobs.append((mode, D[mode], f"yielding: braid {'--background' if mode == 'background' else '(default cc)'}"
                                 f" vs iperf3 cubic (starts {D[mode]['iperf_start_s']:.1f} s, stops "
                                 f"{D[mode]['iperf_stop_s']:.1f} s)"))
        elif kind == "fairness" and D.get("series"):
            jobs.append(("ab", D, "fairness: two braid UDP transfers on one link"))
        if not jobs:
            continue
        for tag, d, title in jobs:
            base = os.path.join(outdir, f"udp-{res['scenario']}-{tag}")
            with open(base + ".dat", "w") as f:
                f.write("# " + " ".join(d["series_columns"]) + "\n")
                for row in d["series"]:
                    f.write(" ".join("nan" if x is None else f"{x:.3f}" for x in row) + "\n")
            cols = d["series_columns"]
            names = {"link_ip_mbit": "link (IP bytes, emulator)", "braid_data_mbit": "braid (data acked, its log)",
                     "iperf3_mbit": "iperf3 cubic (receiver, its intervals)", "a_data_mbit": "braid a (data acked)",
                     "b_data_mbit": "braid b (data acked)"}
            plots = [f"'{base}.dat' using 1:{i + 1} with lines lw 2 title '{names.get(cols[i], cols[i])}'"
                     for i in range(1, len(cols))]
            script = "\n".join([
                "set terminal png size 900,420 noenhanced", f"set output '{base}.png'", f"set title \"{title}\"",
                "set xlabel 'time since braid started sending (s)'", "set ylabel 'Mbit/s'", "set grid",
                "set key outside right", "set yrange [0:*]", "plot " + ", ".join(plots)])
            g = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True)
            if g.returncode == 0:
                made.append(os.path.relpath(base + ".png", REPO))
        break
    return made


# --------------------------------------------------------------------------- binaries, locking, main

def private_binaries(args):
    """Copies braid and netlab-emu to a private directory (the build directory is rebuilt by others)."""
    build = args.build or os.environ.get("BUILD") or os.path.join(REPO, "build")
    srcs = {"braid": os.environ.get("BRAID") or os.path.join(build, "braid"),
            "netlab-emu": os.environ.get("NETLAB_EMU") or os.path.join(build, "netlab-emu")}
    for n, p in srcs.items():
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            raise nb.Skip(f"{n} not found at {p} (build it: cmake --build build --target {n}; or set "
                          f"{'BRAID' if n == 'braid' else 'NETLAB_EMU'}=PATH or --build DIR)")
    d = tempfile.mkdtemp(prefix="udpbench-bin-")
    info = {}
    for n, p in srcs.items():
        dst = os.path.join(d, n)
        for _ in range(5):  # a copy taken while the linker writes the file is retried
            m0 = os.stat(p).st_mtime_ns
            shutil.copy2(p, dst)
            time.sleep(0.2)
            if os.stat(p).st_mtime_ns == m0 and os.path.getsize(dst) == os.path.getsize(p):
                break
        info[n.replace("-", "_")] = {
            "source": os.path.abspath(p), "copy": dst, "sha256": nb.sha256(dst),
            "source_mtime": datetime.datetime.fromtimestamp(os.stat(dst).st_mtime).isoformat(timespec="seconds")}
    os.environ["BRAID"] = os.path.join(d, "braid")
    os.environ["NETLAB_EMU"] = os.path.join(d, "netlab-emu")
    return d, info


def preflight():
    tools, braid_ok, why = nb.preflight()  # root, TUN, netlab-emu, iperf3, ip, sha256sum, braid send
    for tool in ("ping", "bash"):
        if not shutil.which(tool):
            raise nb.Skip(f"{tool} is not installed (apt-get install {'iputils-ping' if tool == 'ping' else tool})")
    if not braid_ok:
        raise nb.Skip(why)
    h = subprocess.run([tools["braid"], "send", "--help"], capture_output=True, text=True)
    for opt in ("--background", "udp:"):
        if opt not in h.stdout + h.stderr:
            raise nb.Skip(f"this braid's 'send' has no {opt} (UDP lanes not in this build)")
    return tools


def run_scenario(name, args, tools, bininfo, workroot, current):
    sc = dict(SCENARIOS[name])
    if args.quick:
        sc.update(sc["quick"])
    for key in ("size", "iperf_seconds"):
        if getattr(args, key) is not None and key in sc:
            sc[key] = getattr(args, key)
    if args.no_contrast and "contrast" in sc:
        sc["contrast"] = False
    if args.ping_interval and "ping_interval" in sc:
        sc["ping_interval"] = args.ping_interval
    settings = {k: v for k, v in sc.items() if k not in ("quick", "description", "kind", "link")}
    link = nb.parse_link(sc["link"])
    if sc["kind"] == "yielding":
        need = (sc["yield_at"] + sc["iperf_seconds"] * 0.1 + 5) * 0.9 * link["rate_bps"] / 8
        if sc["size"] < need:
            log(f"yielding: --size {sc['size'] / MiB:g} MiB may end before the take-back can be judged "
                f"(~{need / MiB:.0f} MiB needed with a yielding braid)")
    run = Run(name, sc, args, tools, workroot)
    current[:] = [run]
    res = {"scenario": name, "kind": sc["kind"], "description": sc["description"], "link": sc["link"],
           "link_parsed": link, "settings": settings, "runs": args.runs, "prefix": args.prefix,
           "started": datetime.datetime.now().isoformat(timespec="seconds"), "host": os.uname().nodename,
           "kernel": os.uname().release, "load_avg_at_start": os.getloadavg(),
           "command": "bench/netlab/udp/run " + shlex.join(sys.argv[1:]), "binaries": bininfo,
           "method": {"common": METHOD["common"], sc["kind"]: METHOD[sc["kind"]]},
           "runs_detail": [], "errors": []}
    log(f"scenario {name}: netlab up --link '{sc['link']}' (prefix {args.prefix}), {args.runs} run(s), "
        f"settings {json.dumps(settings)}")
    try:
        run.lab.up()
        run.commands.append(f"netlab up --link '{sc['link']}'")
        res["tcp_default_congestion_control"] = run.lab.run(
            "snd", "sysctl", "-n", "net.ipv4.tcp_congestion_control").stdout.strip()
        for k in range(args.runs):
            run.commands = [] if k else run.commands
            t0 = time.time()
            F, D, errors = KINDS[sc["kind"]](run, k)
            res["runs_detail"].append({"run": k + 1, "figures": F, "detail": D, "errors": errors,
                                       "commands": run.commands, "seconds": round(time.time() - t0, 1)})
            res["errors"] += [f"run {k + 1}: {e}" for e in errors]
    finally:
        run.lab.down()
        shutil.rmtree(run.work, ignore_errors=True)
        current[:] = []
    res["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    res["medians"] = medians(res["runs_detail"])
    rows = rows_for(name, sc, link)
    evaluate(res, rows)
    missing = [t["label"] for t in res["table_rows"] if t["median_value"] is None and t["target"]]
    if missing:
        res["errors"].append("not measured: " + ", ".join(missing))
    return res


def write_outputs(res, outdir):
    os.makedirs(outdir, exist_ok=True)
    res["plots"] = plot(res, outdir)
    with open(os.path.join(outdir, f"udp-{res['scenario']}.json"), "w") as f:
        json.dump(res, f, indent=1, default=str)
    t = table(res)
    with open(os.path.join(outdir, "udp-summary.md"), "a") as f:
        f.write(t + "\n")
    print(t, flush=True)


def main():
    ap = argparse.ArgumentParser(prog="bench/netlab/udp/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*", help=f"{' '.join(ORDER)} or all")
    ap.add_argument("--list", action="store_true", help="print the scenarios and exit")
    ap.add_argument("--runs", type=int, default=3, help="runs per scenario; figures are medians (default 3)")
    ap.add_argument("--size", type=nb.parse_size, help="bytes per braid transfer (default: the scenario's)")
    ap.add_argument("--iperf-seconds", type=int, dest="iperf_seconds",
                    help="length of the iperf3 loads (default: the scenario's)")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes and short iperf3 runs (a smoke test, not the issue's figures)")
    ap.add_argument("--no-contrast", action="store_true", help="yielding: skip the run without --background")
    ap.add_argument("--keep-logs", action="store_true",
                    help="keep every braid run's logs (OUT/udp-failed/...), not only those of failed runs")
    ap.add_argument("--ping-interval", type=float, help="bufferbloat: seconds between pings (default 0.05)")
    ap.add_argument("--send-arg", action="append", default=[],
                    help="extra argument for every braid send (repeatable), e.g. --send-arg=--packet-size=1400")
    ap.add_argument("--variants", type=lambda v: [x for x in v.split(",") if x],
                    help="uplink: only these of braid's variants (comma-separated: "
                         + ",".join(v[0] for v in UPLINK_VARIANTS) + "); iperf3 bbr and cubic always run")
    ap.add_argument("--build", help="where braid and netlab-emu are copied from (default $BUILD, else build/)")
    ap.add_argument("--prefix", default=os.environ.get("UDPBENCH_PREFIX", "udpb"),
                    help="netlab namespace prefix (default udpb, or $UDPBENCH_PREFIX)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "out"), help="output directory (default bench/out)")
    ap.add_argument("--workdir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="payload and received files (default /dev/shm)")
    args = ap.parse_args()
    if args.list:
        for n in ORDER:
            print(f"{n:12s} {SCENARIOS[n]['link']:45s} {SCENARIOS[n]['description']}")
        return 0
    names = ORDER if args.scenarios == ["all"] else args.scenarios
    if not names:
        ap.error(f"name a scenario ({' '.join(ORDER)}) or all")
    for n in names:
        if n not in SCENARIOS:
            ap.error(f"no scenario '{n}' (have: {' '.join(ORDER)})")
    if args.runs < 1:
        ap.error("--runs must be ≥ 1")
    if os.geteuid() != 0:
        print("udpbench: SKIPPED: needs root (network namespaces, TUN devices)", file=sys.stderr)
        return SKIP
    os.makedirs("/run/lock", exist_ok=True)
    lock = open(f"/run/lock/udpbench-{args.prefix}.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print(f"udpbench: another udpbench runs with prefix '{args.prefix}' (one lab at a time)", file=sys.stderr)
        return 1
    bindir = None
    try:
        bindir, bininfo = private_binaries(args)
        tools = preflight()
    except nb.Skip as e:
        print(f"udpbench: SKIPPED: {e}", file=sys.stderr)
        if bindir:
            shutil.rmtree(bindir, ignore_errors=True)
        return SKIP
    log(f"binaries copied to {bindir} (braid {bininfo['braid']['sha256'][:12]}, built "
        f"{bininfo['braid']['source_mtime']}); load {os.getloadavg()[0]:.2f}")
    current = []

    def on_signal(sig, _frame):
        raise KeyboardInterrupt(f"signal {sig}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    atexit.register(lambda: [r.lab.down() for r in current])
    atexit.register(lambda: shutil.rmtree(bindir, ignore_errors=True))
    status = 0
    for n in names:
        try:
            res = run_scenario(n, args, tools, bininfo, args.workdir, current)
        except KeyboardInterrupt:
            log("interrupted: lab removed")
            return 130
        except Exception as e:  # report, clean up (done in run_scenario), go on with the next scenario
            log(f"scenario {n} failed: {type(e).__name__}: {e}")
            status = 1
            continue
        write_outputs(res, args.out)
        if res["errors"]:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
