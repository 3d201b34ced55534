#!/usr/bin/env bash
# `braid sim` exactly as the issue's command line gives it: JSON fields present,
# numbers sane, bad input refused with a message and exit status 2.
set -euo pipefail
braid=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$braid" sim --size 256MiB --chunk 1MiB --seed 1 --policy all --json \
  --lane 'usb:rate=19.1MB/s,rtt=2ms' \
  --lane 'wifi:rate=250Mbit/s,rtt=8ms,hint=400Mbit/s,jitter=2ms' \
  --lane 'bt:rate=1.5Mbit/s,rtt=40ms' \
  --event 'at=2s,lane=wifi,rate=25Mbit/s' --event 'at=3s,lane=usb,down' --event 'at=5s,lane=usb,up')

python3 - "$out" <<'PY' || fail "JSON report"
import json, sys
r = json.loads(sys.argv[1])
for k in ("bound_s", "best_single_lane_s", "policies"):
    assert k in r, k
names = [p["name"] for p in r["policies"]]
assert names == ["braid", "ecf", "minrtt", "roundrobin", "queue", "seed-old"], names
for p in r["policies"]:
    for k in ("time_s", "fraction_of_bound", "speedup_vs_best_lane", "lost_chunks", "duplicate_chunks",
              "stalls", "abandoned", "lanes"):
        assert k in p, (p["name"], k)
    assert p["lost_chunks"] == 0, p["name"]
    assert 0 < p["fraction_of_bound"] <= 1.0 + 1e-9, p
    assert abs(p["fraction_of_bound"] - r["bound_s"] / p["time_s"]) < 1e-9
    assert [l["name"] for l in p["lanes"]] == ["usb", "wifi", "bt"]
    assert abs(sum(l["share"] for l in p["lanes"]) - 1) < 1e-9
    for l in p["lanes"]:
        for k in ("chunks", "bytes", "share", "stalls", "duplicates", "abandoned", "final_estimate_bps"):
            assert k in l, k
PY

table=$("$braid" sim --scenario "$(dirname "$0")/../../scenarios/seed-5ghz.scn" --policy braid)
grep -q '^bound' <<<"$table" || fail "table has no bound row"
grep -q '^braid' <<<"$table" || fail "table has no braid row"

for bad in "--lane nocolon" "--lane a:rate=1Mbit/s,rtt=2ms --policy fastest" "--lane a:rate=1Mbit/s,rtt=2ms --chunk 1KiB" \
           "--lane a:rate=1Mbit/s,rtt=2ms --event at=1s,lane=b,down" ""; do
  set +e
  msg=$("$braid" sim $bad 2>&1 >/dev/null)
  rc=$?
  set -e
  [ $rc -eq 2 ] || fail "'sim $bad' exited $rc, want 2"
  [ -n "$msg" ] || fail "'sim $bad' printed no reason"
done
echo "ok"
