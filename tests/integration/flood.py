#!/usr/bin/env python3
"""Connection flood against a `braid recv`, loopback only, bounded in count and time.

  flood.py --port P [--host 127.0.0.1] [--resets N] [--idle M] [--hello-idle K]
           [--min-seconds S] [--max-seconds T] [--pid PID] [--progress FILE]

Holds M idle connections open (each says nothing; one the receiver closes is
opened again), K more that send a TLS record's first byte and then nothing
(they reach the handshake stage), and makes N connections that are reset
at once (SO_LINGER 0: an RST, no TIME_WAIT), spread over at least S seconds.
With --pid it samples the receiver's threads (/proc/PID/status) and open fds
(/proc/PID/fd) every 20 ms. Prints one JSON line at the end: counts, the
peaks, and how long it ran. Never more than T seconds.
"""
import argparse
import json
import os
import select
import socket
import struct
import sys
import time

LOOPBACK = {"127.0.0.1", "::1"}


def sample(pid):
    threads = fds = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return threads, fds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--resets", type=int, default=20000)
    ap.add_argument("--idle", type=int, default=500)
    ap.add_argument("--hello-idle", type=int, default=0)
    ap.add_argument("--min-seconds", type=float, default=0.0)
    ap.add_argument("--max-seconds", type=float, default=120.0)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--progress", help="file that gets the count of resets done, now and then")
    a = ap.parse_args()
    if a.host not in LOOPBACK:
        sys.exit("flood.py: loopback only (127.0.0.1 or ::1)")
    family = socket.AF_INET6 if ":" in a.host else socket.AF_INET
    target = (a.host, a.port)
    linger0 = struct.pack("ii", 1, 0)

    def open_idle(first_byte=None):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(2.0)
        try:
            s.connect(target)
            if first_byte is not None:
                s.send(first_byte)
        except OSError:
            s.close()
            return None
        s.setblocking(False)
        return s

    start = time.monotonic()
    stats = {"resets": 0, "connect_failures": 0, "idle_opened": 0, "idle_closed_by_receiver": 0,
             "max_threads": 0, "max_fds": 0, "min_fds": None, "samples": 0}
    idle = []
    for _ in range(a.idle):
        s = open_idle()
        if s:
            idle.append(s)
            stats["idle_opened"] += 1
    hello = []
    for _ in range(a.hello_idle):
        s = open_idle(b"\x16")
        if s:
            hello.append(s)

    def take_sample():
        if not a.pid:
            return
        t, f = sample(a.pid)
        if t is None:
            return
        stats["samples"] += 1
        stats["max_threads"] = max(stats["max_threads"], t)
        stats["max_fds"] = max(stats["max_fds"], f)
        stats["min_fds"] = f if stats["min_fds"] is None else min(stats["min_fds"], f)

    def refresh_idle():
        # The receiver drops a silent connection after its deadline: open
        # another, so M stay held open for the whole flood.
        if not idle:
            return
        readable, _, _ = select.select(idle, [], [], 0)
        for s in readable:
            try:
                data = s.recv(1)
            except OSError:
                data = b""
            if data:
                continue
            idle.remove(s)
            s.close()
            stats["idle_closed_by_receiver"] += 1
            n = open_idle()
            if n:
                idle.append(n)
                stats["idle_opened"] += 1

    last_sample = last_refresh = 0.0
    while stats["resets"] < a.resets:
        now = time.monotonic()
        if now - start > a.max_seconds:
            break
        # Spread the resets over --min-seconds: no faster than N / S per second.
        if a.min_seconds > 0 and stats["resets"] > (now - start) / a.min_seconds * a.resets:
            time.sleep(0.001)
        else:
            s = socket.socket(family, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger0)
            s.settimeout(2.0)
            try:
                s.connect(target)
                stats["resets"] += 1
            except OSError:
                stats["connect_failures"] += 1
            s.close()
        if now - last_sample >= 0.02:
            take_sample()
            last_sample = now
        if now - last_refresh >= 0.05:
            refresh_idle()
            last_refresh = now
            if a.progress:
                with open(a.progress + ".tmp", "w") as f:
                    f.write(str(stats["resets"]))
                os.replace(a.progress + ".tmp", a.progress)
    take_sample()
    if a.progress:
        with open(a.progress, "w") as f:
            f.write(str(stats["resets"]))
    for s in idle + hello:
        s.close()
    stats["seconds"] = round(time.monotonic() - start, 3)
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
