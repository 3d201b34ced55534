"""bench/netlab/short [--runs N] [--sizes 16,64,256] [--out DIR]

Issue "Latency"'s short transfers: two fast long links (500 Mbit/s each,
20 ms one way: bench/netlab/scenarios/short64.scn), braid from the command
to its exit for 16, 64 and 256 MiB, with TCP lanes and with UDP lanes, as a
first contact (fresh configuration: pairing with a code) and with a known
peer (paired, and its path figures kept from an unmeasured warm-up run:
PathMemory; run as its user runs it: no code given), beside Linux MPTCP
moving the same bytes (iperf3 -n under mptcpize) in the same run. With
--braid LABEL=PATH given more than once, those builds take turns run by run
(rows LABEL:kind:case), so a before and an after meet the same host load. Reports medians of N runs, the time to the first
acked piece, and the issue's bound: 1.25 x the fluid bound + 3 RTTs, where
the fluid bound is the bytes at the links' payload rate plus one RTT.
Writes netlab-short.json in --out (default bench/out). Needs root and the
netlab (exit 77 when the lab cannot run here).

The lab's two hosts start TCP connections as Linux does by default. To
measure what their settings cost (docs/transport.md, "Initial windows"):
  --initcwnd N  every route of both namespaces starts TCP's congestion
                window at N segments (`ip route change … initcwnd N`);
  --rmem BYTES  both namespaces' net.ipv4.tcp_rmem default (the receiver's
                first window; the minimum kept, the maximum raised to it if
                lower);
  --send-arg A  passed to each `braid send` (repeatable), e.g.
                --send-arg=--latency-target --send-arg=0.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netbench as nb  # noqa: E402


def tune_hosts(lab, initcwnd, rmem):
    """The lab's hosts as an administrator may set them: its IPv4 and IPv6 routes' initial congestion window, and
    tcp_rmem's default (its minimum and maximum kept). Returns what was set, for the JSON."""
    done = {}
    for side in ("snd", "rcv"):
        if initcwnd:
            for family in ("-4", "-6"):
                for r in json.loads(lab.run(side, "ip", "-j", family, "route", "show").stdout or "[]"):
                    if "dev" not in r or r.get("type", "unicast") != "unicast":
                        continue  # the lab's own routes are a prefix on a device, from the kernel
                    cmd = ["ip", family, "route", "change", r["dst"], "dev", r["dev"]]
                    for key, word in (("protocol", "proto"), ("scope", "scope"), ("prefsrc", "src"),
                                      ("metric", "metric")):
                        if key in r:
                            cmd += [word, str(r[key])]
                    lab.run(side, *cmd, "initcwnd", str(initcwnd))
        if rmem:
            cur = lab.run(side, "sysctl", "-n", "net.ipv4.tcp_rmem").stdout.split()
            value = f"{cur[0]} {rmem} {max(int(cur[2]), rmem)}"
            lab.run(side, "sysctl", "-q", "-w", f"net.ipv4.tcp_rmem={value}")
            done[f"{side}_tcp_rmem"] = value
        nb.log(f"{side}: initcwnd {initcwnd or 'default'}, tcp_rmem {done.get(side + '_tcp_rmem', 'default')}")
    if initcwnd:
        done["initcwnd"] = initcwnd
    return done


def main():
    ap = argparse.ArgumentParser(prog="bench/netlab/short", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="16,64,256", help="MiB, comma-separated")
    ap.add_argument("--out", default=os.path.join(nb.REPO, "bench", "out"))
    ap.add_argument("--workdir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--braid", action="append", default=[],
                    help="LABEL=PATH of a braid binary (repeatable: alternated run by run); default: the build's")
    ap.add_argument("--kinds", default="tcp,udp", help="lane kinds, comma-separated")
    ap.add_argument("--cases", default="first_contact,known_peer", help="comma-separated")
    ap.add_argument("--no-mptcp", action="store_true", help="skip MPTCP's runs")
    ap.add_argument("--keep-logs", action="store_true", help="keep each run's logs and reports under OUT/logs")
    ap.add_argument("--initcwnd", type=int, help="the lab's routes start TCP's congestion window at N segments")
    ap.add_argument("--rmem", type=int, help="the lab's tcp_rmem default, bytes (a receiver's first window)")
    ap.add_argument("--send-arg", action="append", default=[], help="an argument for each braid send (repeatable)")
    args = ap.parse_args()
    sc = nb.load_scenario("short64")
    try:
        tools, braid_ok, why = nb.preflight()
    except nb.Skip as e:
        print(f"bench/netlab/short: SKIPPED: {e}", file=sys.stderr)
        return nb.SKIP
    if not braid_ok:
        print(f"bench/netlab/short: braid cannot run: {why}", file=sys.stderr)
        return 1
    bargs = argparse.Namespace(runs=args.runs, size=None, transport="tcp", out=args.out, workdir=args.workdir, cc=None,
                               keep_logs=args.keep_logs)
    b = nb.Bench(sc, tools, braid_ok, why, bargs)
    rtt = 2 * max(l["delay_s"] for l in sc["links"])
    payload_rate = sum(l["rate_bps"] * nb.Bench.payload_factor(l) for l in sc["links"]) / 8
    res = {"scenario": sc["name"], "links": sc["links"], "rtt_s": rtt, "runs": args.runs,
           "started": datetime.datetime.now().isoformat(timespec="seconds"), "load_avg_at_start": os.getloadavg(),
           "command": "bench/netlab/short " + " ".join(sys.argv[1:]), "sizes": [], "hosts": {},
           "send_args": args.send_arg}
    builds = [tuple(x.split("=", 1)) for x in args.braid] or [("", tools["braid"])]
    res["builds"] = {label: path for label, path in builds}
    workdir = tempfile.mkdtemp(prefix="netbench-short-", dir=args.workdir)

    def fresh():  # a first contact: neither end has met the other
        for d in ("cfg-send", "cfg-recv"):
            shutil.rmtree(os.path.join(workdir, d), ignore_errors=True)
    try:
        b.lab.up()
        res["hosts"] = tune_hosts(b.lab, args.initcwnd, args.rmem)
        for mib in [int(x) for x in args.sizes.split(",")]:
            b.size = mib << 20
            fluid = b.size / payload_rate + rtt
            row = {"mib": mib, "fluid_bound_s": fluid, "goal_s": 1.25 * fluid + 3 * rtt, "braid": {}}
            src = b.write_payload(workdir)
            for kind in args.kinds.split(","):
                bargs.transport = kind
                for case in args.cases.split(","):
                    runs = {label: [] for label, _ in builds}
                    fresh()
                    if case == "known_peer":
                        for label, path in builds:  # pairs and leaves the path figures: not measured
                            b.tools["braid"] = path
                            b.braid([0, 1], src, workdir, extra=args.send_arg)
                    for k in range(args.runs):
                        for label, path in builds:
                            b.tools["braid"] = path
                            if case == "first_contact":
                                fresh()
                            r = b.braid([0, 1], src, workdir, code=case == "first_contact", extra=args.send_arg)
                            runs[label].append({x: r.get(x) for x in ("wall_seconds", "seconds", "first_byte_seconds",
                                                                      "mbit")})
                            nb.log(f"{mib} MiB {label + ' ' if label else ''}{kind} {case} run {k + 1}: command to exit "
                                   f"{r['wall_seconds']:.3f} s, first byte {r.get('first_byte_seconds') or 0:.3f} s")
                    for label, _ in builds:
                        rs = runs[label]
                        row["braid"][f"{label + ':' if label else ''}{kind}:{case}"] = {
                            "median_wall_seconds": statistics.median(r["wall_seconds"] for r in rs),
                            "median_first_byte_seconds": statistics.median(r["first_byte_seconds"] or 0 for r in rs),
                            "runs": rs}
            os.unlink(src)
            if tools["mptcpize"] and not args.no_mptcp:
                b.mptcp_setup(0)
                m = [b.iperf(0, nbytes=b.size, mptcp=True, bind_server=False) for _ in range(args.runs)]
                row["mptcp"] = {"median_seconds": statistics.median(x["seconds"] for x in m),
                                "runs": [{"seconds": x["seconds"], "mbit": x["mbit"]} for x in m]}
            res["sizes"].append(row)
    finally:
        b.lab.down()
        shutil.rmtree(workdir, ignore_errors=True)
    res["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "netlab-short.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"short transfers over {sc['name']} (2 x 500 Mbit/s, RTT {rtt * 1000:.0f} ms), medians of {args.runs}, "
          "command to exit (first byte):")
    for row in res["sizes"]:
        cells = [f"{k} {v['median_wall_seconds']:.3f} s ({v['median_first_byte_seconds']:.3f})"
                 for k, v in row["braid"].items()]
        mp = f"; MPTCP transfer {row['mptcp']['median_seconds']:.3f} s" if "mptcp" in row else ""
        print(f"  {row['mib']} MiB: fluid {row['fluid_bound_s']:.3f} s, goal <= {row['goal_s']:.3f} s: "
              + ", ".join(cells) + mp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
