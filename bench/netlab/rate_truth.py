#!/usr/bin/env python3
"""Are braid's reported per-lane rates true? For each netlab result, compare the
rates braid's --json report gives per lane (summed per link) with what the
emulator counted on that link: IP bytes over the transfer's seconds, times the
TCP payload share of a 1500-byte packet (1448/1500).

usage: bench/netlab/rate_truth.py [RESULT.json ...]   (default: bench/netlab/results/netlab-*.json)
"""
import glob
import json
import os
import sys

PAYLOAD_SHARE = 1448 / 1500


def check(path):
    r = json.load(open(path))
    links = r["links"]
    names = [l["name"] for l in links] if isinstance(links, list) else list(links)
    prefix = {f"10.77.{i + 1}.": n for i, n in enumerate(names)}
    rows = []
    for run in r["figures"]["braid:all"]["runs"]:
        if "lanes" not in run:
            continue
        reported = {}
        for lane in run["lanes"]:
            for p, n in prefix.items():
                if lane["local"].startswith(p):
                    reported[n] = reported.get(n, 0) + lane["rate_mbit_per_sec"]
        for n, b in run["link_bytes"].items():
            wire = b * 8 / run["seconds"] / 1e6 * PAYLOAD_SHARE
            if wire > 5:
                rows.append((n, reported.get(n, 0.0), wire))
    return rows


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(here, "results", "netlab-*.json")))
    worst = 0.0
    for f in files:
        for n, rep, wire in check(f):
            ratio = rep / wire
            worst = max(worst, abs(ratio - 1))
            print(f"{os.path.basename(f):28} link {n:3} reported {rep:7.1f} Mbit/s  wire {wire:7.1f}  ratio {ratio:.3f}")
    print(f"worst deviation {worst * 100:.1f} %")


if __name__ == "__main__":
    main()
