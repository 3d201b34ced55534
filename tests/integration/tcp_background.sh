#!/usr/bin/env bash
# `--background` over TCP lanes through the real binary, on loopback (issue 5:
# "the engine can cap a TCP lane's pacing rate from its delay estimate").
# Loopback has no queue, so these check the plumbing, not the yielding (that
# is bench/netlab/udp/run yielding-tcp):
#   idle        64 MiB over two TCP lanes completes identical; every sample
#               line has each lane's `tcp` pacing state, and the --json
#               report each lane's `pacing_cap_bytes_per_sec` (an idle path
#               should get no cap: reported, not asserted, as a loaded
#               machine can delay loopback acks by milliseconds).
#   rate-limit  with --rate-limit the pacing thread keeps each lane's cap at its
#               share, and the kernel's own pacing rate (tcpi_pacing_rate)
#               stays under it: SO_MAX_PACING_RATE reached the socket; the
#               report's `pacing_cap_bytes_per_sec` is that share less its
#               IP and TCP headers' part (the kernel paces payload).
# One case per run: tcp_background.sh BRAID_BINARY CASE.
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace tcpbg

start_recv() {
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 --once --yes --code "$1$CODE_SUFFIX" \
    --json "$W/recv.json" --log "$W/recv.log" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

send() {
  XDG_CONFIG_HOME=$W/scfg "$BRAID" send --json "$W/send.json" --log "$W/send.log" "$@" > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
}

same_file() {
  [ "$(sha256sum < "$W/src/$1")" = "$(sha256sum < "$W/dst/$1")" ] || fail "$1 differs"
}

case "$CASE" in
  idle)
    # Long enough (≥ 0.25 s even on a fast machine) for sample events after
    # the pacer's first look at each lane; 64 MiB could end within the first.
    random_file "$W/src/bg.bin" $((256 << 20)) bg
    start_recv bg
    send --code bg$CODE_SUFFIX --background --lane "tcp:127.0.0.1=127.0.0.1:$PORT" "$W/src/bg.bin" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    same_file bg.bin
    python3 - "$W/send.log" "$W/send.json" <<'PY' || fail "no TCP pacing state in the log"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
samples = [e for e in events if e['event'] == 'sample']
assert samples, 'no sample events'
tcp = [(l['lane'], l['tcp']) for e in samples for l in e['lanes'] if 'tcp' in l]
lanes = {lane for lane, _ in tcp}
assert lanes == {0, 1}, ('lanes with pacing state', lanes)
for lane, t in tcp:
    for k in ('cap', 'queue_ms', 'srtt_ms', 'kernel_pacing', 'acked', 'restarts'):
        assert k in t, (k, t)
# Alone on an idle path the kernel should not meet a queue, so normally no
# cap is set; a loaded machine can delay loopback acks by milliseconds,
# so that is reported, not asserted. A cap, when set, is a positive rate.
capped = [t for _, t in tcp if t['cap'] is not None]
assert all(t['cap'] > 0 for t in capped), capped
assert max(t['acked'] for _, t in tcp) > 16 << 20, 'acked bytes do not grow'
# The --json report: each lane's pacing cap at the end (null: none) and its restarts.
paced = [l for l in rep['lanes'] if 'pacing_cap_bytes_per_sec' in l]
assert {l['lane_id'] for l in paced} == lanes, ('lanes with a pacing report', [l['lane_id'] for l in paced])
for l in paced:
    assert l['kind'] == 'tcp', l
    for k in ('pacing_cap_mbit_per_sec', 'pacing_restarts', 'queuing_delay_ms', 'srtt_ms', 'min_rtt_ms',
              'kernel_pacing_bytes_per_sec', 'segments_retransmitted'):
        assert k in l, (k, l)
    assert l['pacing_cap_bytes_per_sec'] is None or l['pacing_cap_bytes_per_sec'] > 0, l
    assert l['srtt_ms'] > 0, l
print('%d samples, %d lane states (%d with a cap), %.0f MB/s'
      % (len(samples), len(tcp), len(capped), rep['rate_bytes_per_sec'] / 1e6))
PY
    ;;

  rate-limit)
    random_file "$W/src/rl.bin" $((24 << 20)) rl
    start_recv rl
    start=$(date +%s.%N)
    send --code rl$CODE_SUFFIX --background --rate-limit 200Mbit/s --lane "tcp:127.0.0.1=127.0.0.1:$PORT" \
      "$W/src/rl.bin" "127.0.0.1:$PORT"
    end=$(date +%s.%N)
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    same_file rl.bin
    python3 - "$W/send.log" "$W/send.json" "$start" "$end" <<'PY' || fail "the rate limit's cap did not hold"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
# --rate-limit is shared over the live data lanes by what each delivers
# (core/session/rate_split.hpp): every lane has a cap, and at every sample
# the caps add up to the limit at most.
limit = 200e6 / 8
tcp = [l['tcp'] for e in events if e['event'] == 'sample' for l in e['lanes'] if 'tcp' in l]
assert len(tcp) >= 4, len(tcp)
for e in events:
    if e['event'] != 'sample':
        continue
    caps = [l['tcp']['cap'] for l in e['lanes'] if 'tcp' in l and l.get('alive', True)]
    assert all(c is not None and c > 0 for c in caps), caps
    assert sum(caps) <= limit * 1.001, (e['t'], caps)
# tcpi_pacing_rate is the kernel's rate after SO_MAX_PACING_RATE: never above the cap.
over = [(t['kernel_pacing'], t['cap']) for t in tcp if t['kernel_pacing'] > t['cap'] * 1.001]
assert not over, ('kernel pacing above the cap', over[:5])
rate = rep['rate_bytes_per_sec']
assert rate <= 200e6 / 8 * 1.05, rate
paced = [l for l in rep['lanes'] if 'pacing_cap_bytes_per_sec' in l]
assert paced and sum(l['pacing_cap_bytes_per_sec'] for l in paced) <= limit * 1.001, paced
print('caps at the end %s MB/s, kernel pacing max %.1f MB/s, transfer %.1f MB/s'
      % ([round(l['pacing_cap_bytes_per_sec'] / 1e6, 1) for l in paced], max(t['kernel_pacing'] for t in tcp) / 1e6,
         rate / 1e6))
PY
    ;;

  *) fail "unknown case $CASE" ;;
esac
echo "PASS [$CASE]"
