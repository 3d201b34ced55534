#!/usr/bin/env python3
"""`braid probe` against the tools it replaces, on netlab's emulated links.

Per run, in one lab: iperf3 over each link alone (the capacity reference),
ping over each idle link (the RTT reference), `braid probe` over all of them
(its table, JSON and PNG), then a real `braid send` of the scenario's size
over the same discovered paths, to compare with the probe's prediction.
Medians over the runs. Outputs: bench/out/netlab-probe-SCENARIO.{json,md,png}.

Usage: bench/netlab/probe [SCENARIO] [--runs N] [--seconds S] [--size SIZE]
Needs what bench/netlab/run needs (root, /dev/net/tun, netlab-emu, braid, iperf3).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netbench  # noqa: E402  (the lab, the scenarios, iperf3)

BRAID_PORT = netbench.BRAID_PORT
CODE = netbench.CODE


def ping_ms(lab, src, dst, count=20):
    r = lab.run("snd", "ping", "-c", str(count), "-i", "0.05", "-q", "-I", src, dst, timeout=60)
    m = re.search(r"= ([0-9.]+)/([0-9.]+)/([0-9.]+)/", r.stdout)
    if not m:
        raise RuntimeError(f"ping {dst}: no summary: {r.stdout[-300:]}")
    return float(m.group(2))  # the average, as ping prints it


def one_run(b, work, k, seconds, src):
    lab, sc, tools = b.lab, b.sc, b.tools
    links = sc["links"]
    out = {"links": {}}
    for i, l in enumerate(links):
        # The reference with as many connections as the probe's lanes on a
        # path (--streams 2): one TCP stream may not fill a link that two do.
        ip2 = b.iperf(i, parallel=2)
        ip1 = b.iperf(i)
        out["links"][l["name"]] = {"iperf3_mbit": ip2["mbit"], "iperf3_one_stream_mbit": ip1["mbit"],
                                   "ping_ms": ping_ms(lab, b.addr(i, "snd"), b.addr(i, "rcv"))}
    braid = tools["braid"]
    dst = os.path.join(work, "dst")
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    listen = []
    for i in range(len(links)):
        listen += ["--listen", f"{b.addr(i, 'rcv')}:{BRAID_PORT}"]
    rlog = open(os.path.join(work, f"recv-{k}.out"), "w")
    recv = lab.spawn("rcv", "env", f"XDG_CONFIG_HOME={work}/cfg-recv", braid, "recv", "--dir", dst, *listen,
                     "--code", CODE, "--yes", "--no-announce", stdout=rlog, stderr=subprocess.STDOUT)
    try:
        time.sleep(0.5)
        pj, png = os.path.join(work, f"probe-{k}.json"), os.path.join(work, f"probe-{k}.png")
        target = f"{b.addr(0, 'rcv')}:{BRAID_PORT}"
        r = lab.run("snd", "env", f"XDG_CONFIG_HOME={work}/cfg-send", braid, "probe", "--code", CODE,
                    "--seconds", str(seconds), "--size", str(b.size), "--json", pj, "--plot", png, target,
                    timeout=120 + 4 * seconds * (len(links) + 1), check=False)
        if r.returncode != 0:
            raise RuntimeError(f"braid probe exited {r.returncode}: {r.stderr[-1500:]}")
        out["table"] = r.stdout
        probe = json.load(open(pj))
        sj = os.path.join(work, f"send-{k}.json")
        r = lab.run("snd", "env", f"XDG_CONFIG_HOME={work}/cfg-send", braid, "send", "-q", "--code", CODE,
                    "--json", sj, src, target, timeout=600, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"braid send exited {r.returncode}: {r.stderr[-1500:]}")
        sent = json.load(open(sj))
    finally:
        lab.stop(recv)
        rlog.close()
    for p in probe["paths"]:
        name = p["interface"][3:] if p["interface"].startswith("nl-") else p["interface"]
        if name not in out["links"]:
            continue
        L = out["links"][name]
        L["probe_mbit"] = p["alone"]["mbit_per_second"]
        L["probe_idle_rtt_ms"] = p["idle_rtt_ms"]
        L["probe_added_p50_ms"] = p["added_delay_p50_ms"]
        L["probe_added_p95_ms"] = p["added_delay_p95_ms"]
        L["probe_loss"] = p["alone"]["loss"]
        L["capacity_ratio"] = L["probe_mbit"] / L["iperf3_mbit"] if L["iperf3_mbit"] else None
        L["rtt_diff_ms"] = (p["idle_rtt_ms"] - L["ping_ms"]) if p["idle_rtt_ms"] is not None else None
    out["predicted_s"] = probe["prediction"]["seconds"]
    out["idle_paths"] = probe["prediction"]["idle_paths"]
    out["real_s"] = sent["seconds"]
    out["prediction_ratio"] = out["predicted_s"] / out["real_s"]
    out["png"] = png
    return out


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser(prog="bench/netlab/probe", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", nargs="?", default="seed")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0, help="each probe phase (default 3)")
    ap.add_argument("--size", type=netbench.parse_size, help="the real transfer (default: the scenario's)")
    ap.add_argument("--out", default=os.path.join(netbench.REPO, "bench", "out"))
    args = ap.parse_args()
    try:
        tools, braid_ok, why = netbench.preflight()
    except netbench.Skip as e:
        print(f"probe bench: SKIPPED: {e}", file=sys.stderr)
        return netbench.SKIP
    if not braid_ok:
        print(f"probe bench: {why}", file=sys.stderr)
        return 1
    sc = netbench.load_scenario(args.scenario)
    bargs = argparse.Namespace(runs=args.runs, size=args.size, transport="tcp", out=args.out, keep_logs=False)
    b = netbench.Bench(sc, tools, True, "", bargs)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="braid-probe-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    runs = []
    try:
        src = os.path.join(work, "data.bin")
        subprocess.run(f"head -c {b.size} /dev/zero | openssl enc -aes-128-ctr -nosalt -pass pass:probe -pbkdf2 "
                       f"2>/dev/null > {src}", shell=True, check=True)
        b.lab.up()
        for k in range(args.runs):
            netbench.log(f"probe run {k + 1}/{args.runs}")
            runs.append(one_run(b, work, k, args.seconds, src))
            print(runs[-1]["table"], end="", file=sys.stderr)
    finally:
        b.lab.down()
    names = [l["name"] for l in sc["links"]]
    res = {"scenario": sc["name"], "runs": runs, "seconds": args.seconds, "size": b.size,
           "date": time.strftime("%Y-%m-%d %H:%M"), "load": os.getloadavg()[0], "median": {}}
    rows = ["| link | iperf3 -P 2 alone (one stream) | probe alone | probe ÷ iperf3 -P 2 | ping idle | probe idle RTT | "
            "difference | added delay p50 / p95 | loss |", "|---|---|---|---|---|---|---|---|---|"]
    for n in names:
        get = lambda key: median([r["links"][n].get(key) for r in runs])  # noqa: E731
        m = {key: get(key) for key in ("iperf3_mbit", "iperf3_one_stream_mbit", "probe_mbit", "capacity_ratio",
                                       "ping_ms", "probe_idle_rtt_ms",
                                       "rtt_diff_ms", "probe_added_p50_ms", "probe_added_p95_ms", "probe_loss")}
        res["median"][n] = m
        f = lambda v, d=1: "—" if v is None else f"{v:.{d}f}"  # noqa: E731
        rows.append(f"| {n} | {f(m['iperf3_mbit'])} ({f(m['iperf3_one_stream_mbit'])}) Mbit/s | {f(m['probe_mbit'])} Mbit/s | "
                    f"{f(m['capacity_ratio'], 3)} | "
                    f"{f(m['ping_ms'], 2)} ms | {f(m['probe_idle_rtt_ms'], 2)} ms | {f(m['rtt_diff_ms'], 2)} ms | "
                    f"+{f(m['probe_added_p50_ms'])} / +{f(m['probe_added_p95_ms'])} ms | {f(100 * (m['probe_loss'] or 0), 2)} % |")
    pred, real = median([r["predicted_s"] for r in runs]), median([r["real_s"] for r in runs])
    ratio = median([r["prediction_ratio"] for r in runs])
    res["median"]["prediction"] = {"predicted_s": pred, "real_s": real, "ratio": ratio}
    rows.append("")
    per_run = ", ".join("%.3f" % r["prediction_ratio"] for r in runs)
    idle = ", ".join(runs[-1]["idle_paths"]) or "none"
    rows.append(f"Prediction for {netbench.size_label(b.size)}: {pred:.2f} s; the real transfer right after: "
                f"{real:.2f} s; predicted ÷ real {ratio:.3f} (median of {len(runs)}; per run {per_run}). "
                f"Left idle: {idle}.")
    md = "\n".join(rows) + "\n"
    base = os.path.join(args.out, f"netlab-probe-{sc['name']}")
    json.dump(res, open(base + ".json", "w"), indent=1)
    open(base + ".md", "w").write(md)
    if runs:
        shutil.copy(runs[-1]["png"], base + ".png")
    shutil.rmtree(work, ignore_errors=True)
    print(md, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
