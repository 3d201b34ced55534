#!/usr/bin/env python3
"""Samples a process's threads, open fds and RSS every 20 ms, per phase.

  sampler.py PID PHASE_FILE OUT_JSON

PHASE_FILE holds the current phase's name (the bench writes it); "stop"
ends the sampling. OUT_JSON gets, per phase: the peaks and the last sample,
and the process's VmHWM (peak RSS over its life) at the end.
"""
import json
import os
import sys
import time


def sample(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Threads", "VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])  # kB for the Vm* lines
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


def main():
    pid, phase_file, out_json = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    phases = {}
    last = None
    while True:
        try:
            with open(phase_file) as f:
                phase = f.read().strip()
        except FileNotFoundError:
            phase = "start"
        if phase == "stop":
            break
        try:
            s = sample(pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        p = phases.setdefault(phase, {"peak_threads": 0, "peak_fds": 0, "peak_rss_kb": 0, "samples": 0})
        p["peak_threads"] = max(p["peak_threads"], s["Threads"])
        p["peak_fds"] = max(p["peak_fds"], s["fds"])
        p["peak_rss_kb"] = max(p["peak_rss_kb"], s["VmRSS"])
        p["samples"] += 1
        p["last"] = {"threads": s["Threads"], "fds": s["fds"], "rss_kb": s["VmRSS"]}
        last = s
        time.sleep(0.02)
    result = {"phases": phases}
    if last:
        result["vm_hwm_kb"] = last["VmHWM"]
    with open(out_json, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
