#!/usr/bin/env python3
"""braid's network benchmark: one scenario = one set of emulated links (netlab),
measured in one run with iperf3 (each link alone, and -P N on the best link),
braid (all links, best link alone), Linux MPTCP (all links) and braid's
simulator (predicted time). Standard library only.

Usage: bench/netlab/run [options] SCENARIO... | --list      (see --help)
Outputs in bench/out/: netlab-SCENARIO.json (every figure), a Markdown table
(appended to summary.md and printed), netlab-SCENARIO-braid.png and
netlab-SCENARIO-mptcp.png (per-link throughput over time, from the lab's own
byte counters).
"""
import argparse
import atexit
import datetime
import hashlib
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
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
SCEN_DIR = os.path.join(HERE, "scenarios")
NETLAB = os.environ.get("NETLAB", os.path.join(REPO, "tools", "netlab", "netlab"))
CODE = "braid-netlab-bench-fixed-code"
BRAID_PORT = 7878
SKIP = 77  # exit status when the lab cannot run here (ctest's convention)


def log(msg):
    print(f"[netbench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Skip(Exception):
    pass


# --------------------------------------------------------------------------- scenarios

SIZE_UNITS = {"": 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 10**6, "mib": 2**20, "gb": 10**9, "gib": 2**30}
RATE_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_size(text):
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", text.strip())
    if not m or m.group(2).lower() not in SIZE_UNITS:
        raise ValueError(f"bad size '{text}' (e.g. 256MiB)")
    return int(float(m.group(1)) * SIZE_UNITS[m.group(2).lower()])


def size_label(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % div == 0:
            return f"{n // div}{unit}"
    return f"{n}B"


def parse_unit(text, table, what):
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z%]*)", text.strip())
    if not m or m.group(2).lower() not in table:
        raise ValueError(f"bad {what} '{text}'")
    return float(m.group(1)) * table[m.group(2).lower()]


def parse_link(spec):
    name, _, rest = spec.partition(":")
    keys = {}
    for item in filter(None, rest.split(",")):
        k, _, v = item.partition("=")
        keys[k] = v
    link = {"name": name, "spec": spec}
    link["rate_bps"] = parse_unit(keys.get("rate", "0bit"), RATE_UNITS, "rate")
    link["delay_s"] = parse_unit(keys.get("delay", "0ms"), TIME_UNITS, "delay")
    loss = keys.get("loss", "0")
    link["loss"] = float(loss[:-1]) / 100 if loss.endswith("%") else float(loss)
    link["queue"] = keys.get("queue", "default")
    link["mtu"] = int(keys.get("mtu", 1500))
    return link


def load_scenario(name):
    path = os.path.join(SCEN_DIR, name + ".scn")
    if not os.path.isfile(path):
        raise SystemExit(f"netbench: no scenario '{name}' (have: {', '.join(list_scenarios())})")
    sc = {"name": name, "file": os.path.relpath(path, REPO), "links": [], "size": 256 * 2**20,
          "runs": 3, "parallel": 4, "iperf_seconds": 8, "description": "", "cc": None, "outages": []}
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            if line.startswith("#"):
                if not sc["description"]:
                    sc["description"] = line.lstrip("# ")
                continue
            if not line:
                continue
            key, _, val = line.partition(" ")
            val = val.strip()
            if key == "link":
                sc["links"].append(parse_link(val))
            elif key == "size":
                sc["size"] = parse_size(val)
            elif key == "cc":
                sc["cc"] = val
            elif key in ("runs", "parallel", "iperf_seconds"):
                sc[key] = int(val)
            elif key == "outage":
                # outage LINK AT FOR: during every all-links transfer (braid,
                # MPTCP), LINK goes dark AT after the sender starts, for FOR.
                parts = val.split()
                if len(parts) != 3:
                    raise SystemExit(f"netbench: {path}:{lineno}: outage LINK AT FOR (e.g. outage B 4s 3s)")
                sc["outages"].append({"link": parts[0], "at_s": parse_unit(parts[1], TIME_UNITS, "at"),
                                      "for_s": parse_unit(parts[2], TIME_UNITS, "for")})
            else:
                raise SystemExit(f"netbench: {path}:{lineno}: unknown key '{key}'")
    if not sc["links"]:
        raise SystemExit(f"netbench: {path}: no links")
    for o in sc["outages"]:
        if o["link"] not in [l["name"] for l in sc["links"]]:
            raise SystemExit(f"netbench: {path}: outage of an unknown link '{o['link']}'")
    return sc


def list_scenarios():
    order = ["seed", "seed-no-b", "rtt-ratio", "slow-low-rtt", "twins", "lossy", "outage"]
    have = sorted(f[:-4] for f in os.listdir(SCEN_DIR) if f.endswith(".scn"))
    return [n for n in order if n in have] + [n for n in have if n not in order]


# --------------------------------------------------------------------------- tools

def find_binary(name, env_var):
    cands = [os.environ.get(env_var, "")]
    if os.environ.get("BUILD"):
        cands.append(os.path.join(os.environ["BUILD"], name))
    cands += [os.path.join(REPO, "build", name), os.path.join(REPO, "build-bench", name)]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    return shutil.which(name)


def preflight():
    """Returns (tools, braid_ok, why_braid_pending); raises Skip with the reason the lab cannot run."""
    if os.geteuid() != 0:
        raise Skip("needs root (network namespaces, TUN devices)")
    if not os.path.exists("/dev/net/tun"):
        raise Skip("/dev/net/tun is missing")
    emu = find_binary("netlab-emu", "NETLAB_EMU")
    if not emu:
        raise Skip("netlab-emu not found: build it (cmake --build build --target netlab-emu) or set NETLAB_EMU")
    for tool in ("iperf3", "ip", "sha256sum"):
        if not shutil.which(tool):
            raise Skip(f"{tool} is not installed (scripts/install-deps.sh)")
    tools = {"netlab_emu": emu, "mptcpize": shutil.which("mptcpize"), "braid": find_binary("braid", "BRAID")}
    why = ""
    if not tools["braid"]:
        why = "braid binary not found (build target braid or set BRAID)"
    else:
        r = subprocess.run([tools["braid"], "send", "--help"], capture_output=True, text=True)
        if r.returncode != 0 or "--lane" not in r.stdout + r.stderr:
            why = "this braid has no working 'braid send' yet"
    return tools, not why, why


# --------------------------------------------------------------------------- the lab

class Lab:
    def __init__(self, scenario, tools):
        self.sc = scenario
        self.prefix = f"nb{os.getpid() % 100000}"
        self.env = dict(os.environ, NETLAB_PREFIX=self.prefix, NETLAB_EMU=tools["netlab_emu"])
        self.up_done = False
        self.children = []

    def netlab(self, *args, check=True, capture=True, timeout=60):
        r = subprocess.run([NETLAB, *args], env=self.env, capture_output=capture, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"netlab {' '.join(args)} failed: {(r.stderr or '').strip()}")
        return r

    def up(self):
        args = ["up"] + (["--cc", self.sc["cc"]] if self.sc["cc"] else [])
        for l in self.sc["links"]:
            args += ["--link", l["spec"]]
        log(f"lab {self.prefix}: netlab {' '.join(args)}")
        self.up_done = True
        self.netlab(*args, timeout=120)

    def down(self):
        for p in self.children:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass
        self.children = []
        if self.up_done:
            self.netlab("down", check=False, timeout=60)
            self.up_done = False

    def exec_cmd(self, side, *cmd):
        return [NETLAB, "exec", side, *cmd]

    def run(self, side, *cmd, timeout=600, check=True):
        r = subprocess.run(self.exec_cmd(side, *cmd), env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"[{side}] {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
        return r

    def spawn(self, side, *cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        p = subprocess.Popen(self.exec_cmd(side, *cmd), env=self.env, stdout=stdout, stderr=stderr,
                             start_new_session=True)
        self.children.append(p)
        return p

    def stop(self, p, timeout=10):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        if p in self.children:
            self.children.remove(p)

    def stats(self):
        r = self.netlab("stats", "--json", check=False, timeout=20)
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)
        except json.JSONDecodeError:
            return None


def counters(stats):
    """Per link: (up tx bytes, down tx bytes, up drops)."""
    out = []
    for l in stats["links"]:
        d = l["up"]["drops"]
        out.append((l["up"]["tx_bytes"], l["down"]["tx_bytes"], sum(d.values())))
    return out


class Sampler:
    """Samples the lab's per-link byte counters (`netlab stats --json`) every `interval` seconds
    while a run goes on. A call can take longer than the interval on a loaded machine, so calls
    overlap (at most 4 at once); each snapshot carries the emulator's own clock (time_s) and a
    sequence number, which order and date it whatever the call's latency."""

    def __init__(self, lab, interval=0.25):
        self.lab, self.interval = lab, interval
        self.snaps = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _fast_snapshot(self):
        """What `netlab stats --json` does, without a shell: SIGUSR1 to the emulator, then read the
        file it rewrites. Used when the lab's state files are where netlab keeps them; else None."""
        state = os.path.join(os.environ.get("NETLAB_STATE_DIR", "/run/netlab"), self.lab.prefix)
        try:
            with open(os.path.join(state, "emu.pid")) as f:
                pid = int(f.read().strip())
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "netlab-emu":
                    return None
            path = os.path.join(state, "stats.json")
            before = os.stat(path).st_mtime_ns if os.path.exists(path) else 0
            os.kill(pid, signal.SIGUSR1)
            for _ in range(200):
                time.sleep(0.005)
                if os.path.exists(path) and os.stat(path).st_mtime_ns != before:
                    break
            for _ in range(5):  # the emulator may be mid-write
                try:
                    with open(path) as f:
                        return json.load(f)
                except ValueError:
                    time.sleep(0.005)
        except (OSError, ValueError):
            return None
        return None

    def _add(self, d):
        try:
            self.snaps[d.get("seq", len(self.snaps))] = (float(d["time_s"]), counters(d))
        except (KeyError, TypeError, ValueError):
            pass

    def _harvest(self, procs, wait=False):
        for p in list(procs):
            if wait or p.poll() is not None:
                try:
                    out, _ = p.communicate(timeout=20)
                    self._add(json.loads(out))
                except (subprocess.TimeoutExpired, ValueError):
                    p.kill()
                procs.remove(p)

    def _loop(self):
        procs = []
        while True:
            d = self._fast_snapshot()
            if d is not None:
                self._add(d)
            else:
                self._harvest(procs)
                if len(procs) < 4:
                    procs.append(subprocess.Popen([NETLAB, "stats", "--json"], env=self.lab.env, text=True,
                                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
            if self._stop.wait(self.interval):
                break
        self._harvest(procs, wait=True)

    def __enter__(self):
        s = self.lab.stats()  # a baseline before the run starts
        if s is not None:
            self.snaps[s.get("seq", -1)] = (float(s["time_s"]), counters(s))
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        s = self.lab.stats()
        if s is not None:
            self.snaps[s.get("seq", 1 << 60)] = (float(s["time_s"]), counters(s))
        snaps = sorted(self.snaps.values())
        self.samples = [(t - snaps[0][0], c) for t, c in snaps] if snaps else []

    def result(self, names):
        """Per-link bytes that crossed (up direction), and a throughput series (Mbit/s) per link."""
        if len(self.samples) < 2:
            return {"link_bytes": {}, "series": {"t": [], "mbit": {}}}
        first, last = self.samples[0][1], self.samples[-1][1]
        link_bytes = {n: last[i][0] - first[i][0] for i, n in enumerate(names)}
        drops = {n: last[i][2] - first[i][2] for i, n in enumerate(names)}
        kept = [self.samples[0]]
        for smp in self.samples[1:]:
            if smp[0] - kept[-1][0] >= 0.1:
                kept.append(smp)
        ts, series = [], {n: [] for n in names}
        for (ta, ca), (tb, cb) in zip(kept, kept[1:]):
            dt = tb - ta
            ts.append(round(tb, 3))
            for i, n in enumerate(names):
                series[n].append(round((cb[i][0] - ca[i][0]) * 8 / dt / 1e6, 2))
        return {"link_bytes": link_bytes, "link_drops": drops, "series": {"t": ts, "mbit": series}}


# --------------------------------------------------------------------------- measurements

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def iperf_json(text):
    d = json.loads(text)
    if "error" in d:
        raise RuntimeError("iperf3: " + d["error"])
    e = d["end"]
    return {"mbit": e["sum_received"]["bits_per_second"] / 1e6, "seconds": e["sum_received"]["seconds"],
            "bytes": e["sum_received"]["bytes"], "retransmits": e.get("sum_sent", {}).get("retransmits")}


class Bench:
    def __init__(self, sc, tools, braid_ok, why_pending, args):
        self.sc, self.tools, self.braid_ok, self.why_pending, self.args = sc, tools, braid_ok, why_pending, args
        self.lab = Lab(sc, tools)
        self.names = [l["name"] for l in sc["links"]]
        self.runs = args.runs or sc["runs"]
        self.size = args.size or sc["size"]
        self.port = 5200

    def next_port(self):
        self.port += 1
        return self.port

    def addr(self, i, side):
        return f"10.77.{i + 1}.{1 if side == 'snd' else 2}"

    # ---- iperf3 (TCP, one link) ----
    def start_outages(self):
        """The scenario's outages, timed from now (just before a sender starts)."""
        for o in self.sc["outages"]:
            self.lab.netlab("event", f"at={o['at_s']:g}s,link={o['link']},outage={o['for_s']:g}s")

    def iperf(self, i, parallel=1, nbytes=None, mptcp=False, bind_server=True, outages=False):
        port = str(self.next_port())
        wrap = [self.tools["mptcpize"], "run"] if mptcp else []
        srv = wrap + ["iperf3", "-s", "-1", "-p", port] + (["-B", self.addr(i, "rcv")] if bind_server else [])
        p = self.lab.spawn("rcv", *srv)
        try:
            time.sleep(0.4)
            cli = wrap + ["iperf3", "-c", self.addr(i, "rcv"), "-B", self.addr(i, "snd"), "-p", port, "-J"]
            cli += ["-P", str(parallel)] if parallel > 1 else []
            if nbytes:
                cli += ["-n", str(nbytes)]
                timeout = 900
            else:
                cli += ["-t", str(self.sc["iperf_seconds"])]
                timeout = self.sc["iperf_seconds"] + 60
            with Sampler(self.lab) as smp:
                if outages:
                    self.start_outages()
                r = self.lab.run("snd", *cli, timeout=timeout, check=False)
            if r.returncode != 0:
                raise RuntimeError(f"iperf3 client failed ({r.returncode}): {r.stdout[-500:]} {r.stderr[-500:]}")
            out = iperf_json(r.stdout)
            out.update(smp.result(self.names))
            return out
        finally:
            self.lab.stop(p)

    # ---- braid ----
    def write_payload(self, workdir):
        """self.size random bytes in workdir/payload.bin (its SHA-256 kept to check what arrives); the path."""
        src = os.path.join(workdir, "payload.bin")
        with open(src, "wb") as f:
            left = self.size
            while left:
                chunk = os.urandom(min(left, 1 << 22))
                f.write(chunk)
                left -= len(chunk)
        self.src_sha = sha256(src)
        return src

    def braid(self, lanes, srcfile, workdir, code=True, extra=()):
        dst = os.path.join(workdir, "dst")
        shutil.rmtree(dst, ignore_errors=True)
        os.makedirs(dst)
        rjson, sjson = os.path.join(workdir, "recv.json"), os.path.join(workdir, "send.json")
        for f in (rjson, sjson):
            if os.path.exists(f):
                os.unlink(f)
        b = self.tools["braid"]
        listen = []
        for i in lanes:
            listen += ["--listen", f"{self.addr(i, 'rcv')}:{BRAID_PORT}"]
        rlog = open(os.path.join(workdir, "recv.out"), "w")
        recv = self.lab.spawn("rcv", "env", f"XDG_CONFIG_HOME={workdir}/cfg-recv", b, "recv", "--dir", dst,
                              *listen, "--code", CODE, "--yes", "--once", "--json", rjson,
                              "--log", os.path.join(workdir, "recv.log"), stdout=rlog, stderr=subprocess.STDOUT)
        try:
            time.sleep(0.5)
            # code=False: a known peer as its user runs it (paired: no code needed, none given).
            send = ["env", f"XDG_CONFIG_HOME={workdir}/cfg-send", b, "send"] + (["--code", CODE] if code else [])
            kind = "" if self.args.transport == "tcp" else f"{self.args.transport}:"
            for i in lanes:
                send += ["--lane", f"{kind}{self.addr(i, 'snd')}={self.addr(i, 'rcv')}:{BRAID_PORT}"]
            send += list(extra)
            send += ["--json", sjson, "--log", os.path.join(workdir, "send.log"), srcfile,
                     f"{self.addr(lanes[0], 'rcv')}:{BRAID_PORT}"]
            total_rate = sum(self.sc["links"][i]["rate_bps"] for i in lanes) or 1e9
            timeout = 60 + 4 * self.size * 8 / total_rate  # a hang fails the run instead of the whole bench
            with Sampler(self.lab) as smp:
                if len(lanes) == len(self.sc["links"]):
                    self.start_outages()
                t0 = time.monotonic()
                r = self.lab.run("snd", *send, timeout=timeout, check=False)
                wall = time.monotonic() - t0
            try:
                recv.wait(30)
            except subprocess.TimeoutExpired:
                pass
            if r.returncode != 0:
                raise RuntimeError(f"braid send exited {r.returncode}: {r.stderr.strip()[-1500:]}")
        except BaseException as e:
            self.lab.stop(recv)
            rlog.close()
            if isinstance(e, (RuntimeError, subprocess.TimeoutExpired)):
                raise RuntimeError(f"{e} (logs kept in {self.keep_logs(workdir)})") from None
            raise
        try:
            with open(sjson) as f:
                rep = json.load(f)
            got = os.path.join(dst, os.path.basename(srcfile))
            identical = os.path.exists(got) and sha256(got) == self.src_sha
            if not identical:
                raise RuntimeError("braid: the received file differs from the source (SHA-256)")
            out = {"seconds": rep["seconds"], "wall_seconds": wall, "mbit": self.size * 8 / rep["seconds"] / 1e6,
                   "first_byte_seconds": rep.get("first_byte_seconds"),
                   "identical": identical, "stalls": rep.get("stalls"), "duplicates": rep.get("duplicates"),
                   "abandoned": rep.get("abandoned"),
                   "lanes": [{k: l.get(k) for k in ("name", "local", "remote", "bytes", "chunks", "share",
                                                      "rate_mbit_per_sec", "rtt_ms", "stalls", "duplicates",
                                                      "abandoned", "open_at_end", "close_reason")}
                             for l in rep.get("lanes", [])]}
            out.update(smp.result(self.names))
            if self.args.keep_logs:
                out["logs"] = self.keep_logs(workdir, "logs")
            return out
        finally:
            self.lab.stop(recv)
            rlog.close()

    def keep_logs(self, workdir, under="failed"):
        keep = os.path.join(self.args.out, under, f"{self.sc['name']}-{time.strftime('%Y%m%d-%H%M%S')}")
        os.makedirs(keep, exist_ok=True)
        for f in ("send.log", "recv.log", "recv.out", "send.json", "recv.json"):
            if os.path.exists(os.path.join(workdir, f)):
                shutil.copy(os.path.join(workdir, f), keep)
        return os.path.relpath(keep, REPO)

    # ---- MPTCP ----
    def mptcp_setup(self, first, backup=()):
        for side in ("snd", "rcv"):
            self.lab.run(side, "ip", "mptcp", "endpoint", "flush")
            self.lab.run(side, "ip", "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "8")
        for i, l in enumerate(self.sc["links"]):
            if i == first:
                continue
            flags = ["signal"] + (["backup"] if l["name"] in backup else [])
            self.lab.run("rcv", "ip", "mptcp", "endpoint", "add", self.addr(i, "rcv"), "dev", "nl-" + l["name"], *flags)

    # ---- simulator ----
    # A link's rate counts IP bytes; a TCP lane moves payload: per full
    # packet of MTU bytes, 20 of IPv4 header, 20 of TCP and 12 of TCP
    # timestamps are not file data (1448 of 1500). The simulator's lanes
    # carry file data, so they get the link's rate times this.
    @staticmethod
    def payload_factor(link):
        mtu = link.get("mtu", 1500)
        return (mtu - 52) / mtu

    def sim(self, lanes, rates_bps, payload=True):
        cmd = [self.tools["braid"], "sim", "--json", "--policy", "braid", "--size", str(self.size)]
        for i in lanes:
            l = self.sc["links"][i]
            rtt_ms = l['delay_s'] * 2 * 1e3
            rate = rates_bps[i] * (self.payload_factor(l) if payload else 1)
            spec = f"{l['name']}:rate={rate / 1e6:.3f}Mbit,rtt={rtt_ms:g}ms"
            if self.args.transport == "tcp":
                # TCP's start (10 segments, doubling per round trip) and its
                # retransmission timer after an outage (Linux: 200 ms + RTT).
                spec += f",iw=14480B,rto={200 + rtt_ms:g}ms"
            if l["loss"]:
                spec += f",loss={l['loss']:g}"
            cmd += ["--lane", spec]
        names = [self.sc["links"][i]["name"] for i in lanes]
        for o in self.sc["outages"]:
            if o["link"] in names:
                cmd += ["--event", f"at={o['at_s']:g}s,lane={o['link']},down",
                        "--event", f"at={o['at_s'] + o['for_s']:g}s,lane={o['link']},up"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            return {"error": r.stderr.strip()[-500:], "command": " ".join(cmd[1:])}
        d = json.loads(r.stdout)
        p = d["policies"][0]
        return {"seconds": p["time_s"], "mbit": self.size * 8 / p["time_s"] / 1e6, "bound_seconds": d.get("bound_s"),
                "command": "braid " + " ".join(cmd[1:])}

    # ---- the whole scenario ----
    def measure(self, label, fn):
        runs = []
        for k in range(self.runs):
            try:
                r = fn()
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                log(f"{label} run {k + 1}: FAILED: {e}")
                r = {"error": str(e)}
            else:
                log(f"{label} run {k + 1}/{self.runs}: {r['mbit']:.1f} Mbit/s")
            runs.append(r)
        ok = [r for r in runs if "error" not in r]
        med = statistics.median(r["mbit"] for r in ok) if ok else None
        res = {"median_mbit": med, "runs_ok": len(ok), "runs": runs}
        if ok and "seconds" in ok[0]:
            res["median_seconds"] = statistics.median(r["seconds"] for r in ok)
        return res

    def run(self):
        sc, n = self.sc, len(self.sc["links"])
        # A run at another size than the scenario's own keeps its own files (twins-256MiB next to twins).
        name = sc["name"] if self.size == sc["size"] else f"{sc['name']}-{size_label(self.size)}"
        res = {"scenario": sc["name"], "name": name, "description": sc["description"], "scenario_file": sc["file"],
               "links": sc["links"], "tcp_congestion_control": sc["cc"], "size_bytes": self.size, "runs": self.runs,
               "started": datetime.datetime.now().isoformat(timespec="seconds"),
               "host": os.uname().nodename, "kernel": os.uname().release,
               "load_avg_at_start": os.getloadavg(), "command": "bench/netlab/run " + " ".join(sys.argv[1:]),
               "sample_interval_s": 0.25, "figures": {}}
        F = res["figures"]
        workdir = tempfile.mkdtemp(prefix=f"netbench-{sc['name']}-", dir=self.args.workdir)
        try:
            self.lab.up()
            res["tcp_congestion_control"] = self.lab.run("snd", "sysctl", "-n",
                                                         "net.ipv4.tcp_congestion_control").stdout.strip()
            # 1. each link alone
            for i, l in enumerate(sc["links"]):
                F[f"iperf3:{l['name']}"] = self.measure(f"iperf3 link {l['name']}", lambda i=i: self.iperf(i))
            singles = [F[f"iperf3:{l['name']}"]["median_mbit"] or 0 for l in sc["links"]]
            best = max(range(n), key=lambda i: singles[i])
            res["best_link"] = sc["links"][best]["name"]
            res["sum_of_links_mbit"] = sum(singles)
            # 5. parallel streams over the best link
            if sc["parallel"] > 1:
                F[f"iperf3-P{sc['parallel']}:{res['best_link']}"] = self.measure(
                    f"iperf3 -P {sc['parallel']} link {res['best_link']}",
                    lambda: self.iperf(best, parallel=sc["parallel"]))
            # simulator predictions (nominal rates, and the rates iperf3 measured)
            nominal = [l["rate_bps"] for l in sc["links"]]
            measured = [s * 1e6 for s in singles]
            all_lanes = list(range(n))
            # Nominal: the links' rates as TCP payload (payload_factor); iperf3's are payload already.
            F["sim:all"] = {"nominal": self.sim(all_lanes, nominal),
                            "iperf3_rates": self.sim(all_lanes, measured, payload=False),
                            "payload_factor": [self.payload_factor(l) for l in sc["links"]]}
            F["sim:best"] = {"nominal": self.sim([best], nominal),
                             "iperf3_rates": self.sim([best], measured, payload=False)}
            # 2./3. braid
            if self.braid_ok:
                src = self.write_payload(workdir)
                F["braid:all"] = self.measure("braid all links", lambda: self.braid(all_lanes, src, workdir))
                F["braid:best"] = self.measure(f"braid link {res['best_link']}",
                                               lambda: self.braid([best], src, workdir))
                # Contrasts: the same transfer with other send arguments, in the same run.
                for name, extra in self.args.contrast:
                    F[f"braid:all:{name}"] = self.measure(f"braid all links, {name}",
                                                          lambda: self.braid(all_lanes, src, workdir, extra=extra))
                    F[f"braid:all:{name}"]["send_arguments"] = extra
                os.unlink(src)
            else:
                F["braid:all"] = F["braid:best"] = {"pending": self.why_pending}
            # 4. MPTCP (initial subflow on the best link, the others announced by the receiver)
            if self.tools["mptcpize"]:
                self.mptcp_setup(best)
                F["mptcp:all"] = self.measure("mptcp all links",
                                              lambda: self.iperf(best, nbytes=self.size, mptcp=True, bind_server=False,
                                                                 outages=True))
                F["mptcp:all"]["endpoints"] = self.lab.run("rcv", "ip", "mptcp", "endpoint", "show").stdout
                slow = [l["name"] for i, l in enumerate(sc["links"])
                        if i != best and singles[i] < 0.1 * singles[best]]
                if slow:  # the reference: MPTCP with the slow lane(s) marked backup
                    self.mptcp_setup(best, backup=slow)
                    F["mptcp-backup:all"] = self.measure(
                        f"mptcp, {','.join(slow)} backup",
                        lambda: self.iperf(best, nbytes=self.size, mptcp=True, bind_server=False, outages=True))
                    F["mptcp-backup:all"]["backup_links"] = slow
            else:
                F["mptcp:all"] = {"pending": "mptcpize not installed (Debian package mptcpd)"}
        finally:
            self.lab.down()
            shutil.rmtree(workdir, ignore_errors=True)
        res["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
        res["ratios"] = ratios(res)
        return res


def med(F, key):
    f = F.get(key) or {}
    return f.get("median_mbit")


def parse_contrast(text):
    name, sep, rest = text.partition("=")
    if not sep or not name or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise argparse.ArgumentTypeError(f"--contrast wants NAME=ARGS (NAME of letters, digits, '-', '_', '.'): {text!r}")
    return name, shlex.split(rest)


def ratios(res):
    F, s = res["figures"], res["sum_of_links_mbit"]
    out = {}
    b, m = med(F, "braid:all"), med(F, "mptcp:all")
    if b and s:
        out["braid_all_over_sum"] = b / s
    if m and s:
        out["mptcp_over_sum"] = m / s
    if b and m:
        out["braid_over_mptcp"] = b / m
    bb = med(F, "braid:best")
    if b and bb:
        out["braid_all_over_braid_best"] = b / bb
    best = med(F, f"iperf3:{res['best_link']}")
    if b and best:
        out["braid_all_over_best_link_iperf3"] = b / best
    for k in F:
        c = med(F, k) if k.startswith("braid:all:") else None
        if c and s:
            out[f"braid_all_{k[10:]}_over_sum"] = c / s
    tm = (F.get("braid:all") or {}).get("median_seconds")
    for k in ("nominal", "iperf3_rates"):
        ts = ((F.get("sim:all") or {}).get(k) or {}).get("seconds")
        if tm and ts:
            out[f"sim_{k}_over_measured_time"] = ts / tm
    return out


# --------------------------------------------------------------------------- output

def fmt(x, d=1):
    return "—" if x is None else f"{x:.{d}f}"


def link_shares(f):
    """'on the links: U 33 % W 66 % B 1 %' for the median run, from the lab's counters."""
    ok = sorted((r for r in f.get("runs", []) if "error" not in r and r.get("link_bytes")), key=lambda r: r["mbit"])
    if not ok:
        return ""
    lb = ok[len(ok) // 2]["link_bytes"]
    total = sum(lb.values()) or 1
    return "on the links: " + " ".join(f"{n} {100 * b / total:.0f} %" for n, b in lb.items())


def table(res):
    F, s = res["figures"], res["sum_of_links_mbit"]
    rows = []

    def row(what, key, note=""):
        f = F.get(key)
        if f is None:
            return
        if "pending" in f:
            rows.append(f"| {what} | pending | — | — | {f['pending']} |")
            return
        m = f.get("median_mbit")
        ratio = fmt(m / s, 2) if m and s else "—"
        fails = f["runs"] and len(f["runs"]) - f["runs_ok"]
        n = f"{f['runs_ok']}" + (f" ({fails} failed)" if fails else "")
        if "median_seconds" in f and key.startswith("braid"):
            note = (note + "; " if note else "") + f"{fmt(f['median_seconds'], 2)} s"
        if key.endswith(":all") or key.startswith("braid:all:"):
            note = (note + "; " if note else "") + link_shares(f)
        rows.append(f"| {what} | {fmt(m)} | {ratio} | {n} | {note} |")

    links = ", ".join(f"{l['name']} {l['rate_bps'] / 1e6:g} Mbit/s {l['delay_s'] * 1e3:g} ms"
                      + (f" {l['loss'] * 100:g} % loss" if l["loss"] else "") for l in res["links"])
    out = [f"### {res['scenario']} — {links}", "",
           f"{res['size_bytes'] / 2**20:g} MiB per transfer, TCP {res.get('tcp_congestion_control') or '?'}, "
           f"medians of {res['runs']} runs, {res['started']}, "
           f"load at start {res['load_avg_at_start'][0]:.2f}", "",
           "| figure | Mbit/s | × sum of links | runs | note |", "|---|---|---|---|---|"]
    for l in res["links"]:
        f = F[f"iperf3:{l['name']}"]
        rt = [r.get("retransmits") for r in f["runs"] if "retransmits" in r]
        row(f"iperf3 TCP, link {l['name']} alone", f"iperf3:{l['name']}",
            f"median retransmits {int(statistics.median(rt))}" if rt else "")
    rows.append(f"| sum of the links alone | {fmt(s)} | 1.00 | | |")
    row(f"braid, all links", "braid:all")
    row(f"braid, best link ({res['best_link']}) only", "braid:best")
    for k in F:
        if k.startswith("braid:all:"):
            row(f"braid, all links, {k[10:]} (`{' '.join(F[k].get('send_arguments', []))}`)", k)
    row(f"MPTCP (mptcpize iperf3 -n), all links", "mptcp:all", "kernel default scheduler")
    if "mptcp-backup:all" in F:
        row(f"MPTCP, {','.join(F['mptcp-backup:all']['backup_links'])} as backup", "mptcp-backup:all")
    for k in F:
        if k.startswith("iperf3-P"):
            row(f"iperf3 -P {k[8:].split(':')[0]}, link {res['best_link']}", k)
    for k, label in (("nominal", "nominal rates"), ("iperf3_rates", "iperf3's rates")):
        p = (F.get("sim:all") or {}).get(k) or {}
        if "seconds" in p:
            tm = (F.get("braid:all") or {}).get("median_seconds")
            note = f"predicts {p['seconds']:.2f} s" + (f" vs measured {tm:.2f} s ({p['seconds'] / tm:.2f}×)" if tm else
                                                        " (braid measured: pending)")
            rows.append(f"| braid sim, all links, {label} | {fmt(p['mbit'])} | {fmt(p['mbit'] / s, 2) if s else '—'}"
                        f" | sim | {note} |")
    out += rows
    r = res["ratios"]
    if r:
        out += ["", "Ratios: " + ", ".join(f"{k} = {v:.3f}" for k, v in r.items())]
    return "\n".join(out) + "\n"


def gnuplot_terminal():
    r = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" if "pngcairo" in r.stdout + r.stderr else "png"


def plot(res, key, path, title):
    f = res["figures"].get(key) or {}
    ok = [r for r in f.get("runs", []) if "error" not in r and r.get("series", {}).get("t")]
    if not ok or not shutil.which("gnuplot"):
        return None
    # the median run
    ok.sort(key=lambda r: r["mbit"])
    run = ok[len(ok) // 2]
    t, series = run["series"]["t"], run["series"]["mbit"]
    names = list(series)
    dat = path[:-4] + ".dat"
    with open(dat, "w") as d:
        d.write("# t_s " + " ".join(names) + " total   (Mbit/s of IP bytes that crossed each link)\n")
        for k, tk in enumerate(t):
            vals = [series[n][k] for n in names]
            d.write(f"{tk} " + " ".join(str(v) for v in vals) + f" {sum(vals):.2f}\n")
    term = gnuplot_terminal()
    font = "font 'Sans,10'" if term == "pngcairo" else ""
    plots = [f"'{dat}' using 1:{k + 2} with lines lw 2 title '{n}'" for k, n in enumerate(names)]
    plots.append(f"'{dat}' using 1:{len(names) + 2} with lines lw 1 dt 2 lc rgb 'black' title 'total'")
    script = "\n".join([
        f"set terminal {term} size 900,420 {font}", f"set output '{path}'",
        f"set title \"{title} ({run['mbit']:.0f} Mbit/s goodput, median run)\"",
        "set xlabel 'time (s)'", "set ylabel 'Mbit/s on the link (IP bytes)'", "set grid", "set key outside right",
        "set yrange [0:*]", "plot " + ", ".join(plots)])
    r = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True)
    if r.returncode != 0:
        log(f"gnuplot failed: {r.stderr.strip()}")
        return None
    return os.path.relpath(path, REPO)


def write_outputs(res, outdir):
    os.makedirs(outdir, exist_ok=True)
    name = res.get("name", res["scenario"])
    res["plots"] = {}
    for key, who in (("braid:all", "braid"), ("mptcp:all", "mptcp")):
        p = plot(res, key, os.path.join(outdir, f"netlab-{name}-{who}.png"),
                 f"{name}: {who} over all links, per-link throughput")
        if p:
            res["plots"][who] = p
    with open(os.path.join(outdir, f"netlab-{name}.json"), "w") as f:
        json.dump(res, f, indent=1)
    t = table(res)
    with open(os.path.join(outdir, "summary.md"), "a") as f:
        f.write(t + "\n")
    print(t, flush=True)


def overview(outdir):
    """One table over every scenario's latest JSON in outdir (for the README and docs)."""
    rows = ["| scenario | links (Mbit/s, one-way delay) | sum of links alone (iperf3) | braid, all links | "
            "braid ÷ sum | braid, best link | MPTCP, all links | braid ÷ MPTCP | sim predicts / measured time |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name in list_scenarios():
        path = os.path.join(outdir, f"netlab-{name}.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            res = json.load(f)
        F, r, s = res["figures"], res.get("ratios", {}), res["sum_of_links_mbit"]
        links = " + ".join(f"{l['rate_bps'] / 1e6:g}/{l['delay_s'] * 1e3:g} ms" + (f" {l['loss'] * 100:g} %" if l["loss"]
                                                                                    else "") for l in res["links"])

        def cell(key):
            f = F.get(key) or {}
            return "pending" if "pending" in f else fmt(f.get("median_mbit"))

        sim = r.get("sim_nominal_over_measured_time")
        rows.append(f"| {name} | {links} | {fmt(s)} | {cell('braid:all')} | {fmt(r.get('braid_all_over_sum'), 2)} | "
                    f"{cell('braid:best')} | {cell('mptcp:all')} | {fmt(r.get('braid_over_mptcp'), 2)} | "
                    f"{fmt(sim, 2)} |")
    return "\n".join(rows) + "\n"


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(prog="bench/netlab/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*", help="scenario names (bench/netlab/scenarios/NAME.scn)")
    ap.add_argument("--list", action="store_true", help="print the scenario names and exit")
    ap.add_argument("--table", action="store_true",
                    help="print one table over the latest JSON of every scenario in --out, and exit")
    ap.add_argument("--report", action="store_true",
                    help="redo the tables and plots of the given scenarios from their JSON in --out, and exit")
    ap.add_argument("--runs", type=int, help="runs per figure (default: the scenario's, 3)")
    ap.add_argument("--size", type=parse_size, help="bytes per braid/MPTCP transfer (default: the scenario's)")
    ap.add_argument("--cc", help="TCP congestion control in both namespaces (default: the scenario's 'cc' key, else "
                    "what the namespaces inherit from the host; the one in force is recorded)")
    ap.add_argument("--transport", choices=["tcp", "udp"], default="tcp",
                    help="braid's lane kind on every link (default tcp)")
    ap.add_argument("--contrast", action="append", default=[], type=parse_contrast, metavar="NAME=ARGS",
                    help="also run braid over all links with these extra send arguments, in the same run "
                         "(e.g. 'cap-off=--latency-target 0'); repeatable")
    ap.add_argument("--keep-logs", action="store_true",
                    help="keep every braid run's logs (send.log with its per-lane samples, recv.log, the --json "
                         "reports) in OUT/logs/SCENARIO-TIME, named in the run's figure as 'logs'")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "out"), help="output directory")
    ap.add_argument("--workdir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where payload and received files go (default /dev/shm: tmpfs)")
    args = ap.parse_args()
    if args.list:
        print("\n".join(list_scenarios()))
        return 0
    if args.table:
        print(overview(args.out), end="")
        return 0
    if not args.scenarios:
        ap.error("give a SCENARIO (or --list)")
    if args.report:
        for n in args.scenarios:
            with open(os.path.join(args.out, f"netlab-{n}.json")) as f:
                write_outputs(json.load(f), args.out)
        return 0
    scenarios = [load_scenario(n) for n in args.scenarios]
    for sc in scenarios:
        sc["cc"] = args.cc or sc["cc"]
    try:
        tools, braid_ok, why = preflight()
    except Skip as e:
        print(f"netbench: SKIPPED: {e}", file=sys.stderr)
        return SKIP
    if not braid_ok:
        log(f"braid rows will be marked pending: {why}")
    if not tools["mptcpize"]:
        log("mptcpize not found (Debian package mptcpd): the MPTCP rows will be marked pending")

    current = []

    def on_signal(sig, _frame):
        raise KeyboardInterrupt(f"signal {sig}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    atexit.register(lambda: [b.lab.down() for b in current])
    status = 0
    for sc in scenarios:
        b = Bench(sc, tools, braid_ok, why, args)
        current[:] = [b]
        log(f"scenario {sc['name']}: {len(sc['links'])} links, {b.size / 2**20:g} MiB, {b.runs} runs")
        try:
            res = b.run()
        except KeyboardInterrupt:
            log("interrupted: lab removed")
            return 130
        except Exception as e:  # report, clean up, go on with the next scenario
            log(f"scenario {sc['name']} failed: {type(e).__name__}: {e}")
            status = 1
            continue
        write_outputs(res, args.out)
    return status


if __name__ == "__main__":
    sys.exit(main())
