#!/usr/bin/env python3
"""kill_when.py LOG BYTES -- COMMAND...: runs COMMAND and kills it with
SIGKILL (no cleanup, like a crash or a power cut) once its `--log` LOG shows
at least BYTES acked in this run (the sender's "progress" and "sample"
events, less what its "resume" event says was held from an earlier run). Exits with COMMAND's status (137 when it was killed). The test's
fault, from outside: the sender has no hook for it."""
import json, os, signal, subprocess, sys, time

log, want = sys.argv[1], int(sys.argv[2])
cmd = sys.argv[sys.argv.index('--') + 1:]
proc = subprocess.Popen(cmd)
seen = 0
resumed = 0
deadline = time.monotonic() + 120
while proc.poll() is None and time.monotonic() < deadline:
    try:
        with open(log) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line being written
                if e.get('event') == 'resume':
                    resumed = e.get('resumed_bytes', 0)
                elif e.get('event') == 'sample':
                    seen = max(seen, e.get('delivered', 0))
                elif e.get('event') == 'progress':
                    seen = max(seen, e.get('bytes', 0))
    except FileNotFoundError:
        pass
    if seen - resumed >= want:
        os.kill(proc.pid, signal.SIGKILL)
        break
    time.sleep(0.005)
sys.exit(128 + signal.SIGKILL if proc.wait() == -signal.SIGKILL else proc.returncode)
