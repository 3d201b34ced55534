#!/usr/bin/env bash
# Byte-stream lanes through the real `braid` binary: lanes over a child
# process's stdin/stdout (`exec:`) or its terminal (`pty:`), with `braid
# relay` as the far end joining them to the receiver's TCP port (in real use
# through ssh). One case per run: stream.sh BRAID_BINARY CASE (unix, exec, pty-slow).
# Each checks the file, the exit codes, the report's lane kinds and that no
# relay process outlives the transfer.
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace stream
EXTRA_LISTEN=()

start_recv() {
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 "${EXTRA_LISTEN[@]}" --code stream-test$CODE_SUFFIX --yes --once \
    --json "$W/recv.json" --log "$W/recv.log" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

send() {
  XDG_CONFIG_HOME=$W/scfg "$BRAID" send --code stream-test$CODE_SUFFIX --json "$W/send.json" --log "$W/send.log" "$@" \
    > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
}

check() {
  [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
  wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
  cmp -s "$W/src/data.bin" "$W/dst/data.bin" || fail "the received file differs"
  python3 - "$W/send.json" "$@" <<'PY' || fail "report check failed"
import json, sys
s = json.load(open(sys.argv[1]))
for expr in sys.argv[2:]:
    if not eval(expr):
        print('not true:', expr, [(l['lane_id'], l['kind'], l['bytes'], l.get('close_reason')) for l in s['lanes']],
              file=sys.stderr)
        sys.exit(1)
PY
  # The lane's child (the relay) ended with the lane.
  ! pgrep -f "braid relay .*127.0.0.1:$PORT" > /dev/null || fail "a relay process outlived its lane"
}

case "$CASE" in
  unix)  # a TCP lane and a lane over a Unix-domain socket (recv --listen unix:PATH)
    random_file "$W/src/data.bin" $((48 << 20)) unix
    EXTRA_LISTEN=(--listen "unix:$W/braid.sock")
    start_recv
    grep -q "unix:$W/braid.sock" "$W/recv.out" || fail "the ready line does not name the socket"
    send --lane "tcp:127.0.0.1=127.0.0.1:$PORT" --lane "unix:$W/braid.sock" "$W/src/data.bin" "127.0.0.1:$PORT"
    check "[l['kind'] for l in s['lanes']] == ['tcp', 'tcp', 'stream']" \
          "all(l['bytes'] > 0 for l in s['lanes'])" \
          "sum(l['bytes'] for l in s['lanes']) == 48 << 20"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); ls=[l for t in r.get("transfers",[r]) for l in t["lanes"]]; \
sys.exit(0 if any(l["local"].startswith("unix:") and l["bytes"] > 0 for l in ls) else 1)' "$W/recv.json" \
      || fail "the receiver's report has no unix lane that carried bytes: $(cat "$W/recv.json")"
    [ ! -e "$W/braid.sock" ] || fail "the receiver left its socket file behind"
    ;;

  exec)  # a TCP lane and a lane through a child's stdin/stdout
    random_file "$W/src/data.bin" $((48 << 20)) exec
    start_recv
    # The rate limit keeps the transfer going ~0.5 s: unlimited, the TCP lanes
    # moved the 48 MiB in 110 ms, before the child's lane had a piece through.
    send --rate-limit 800Mbit/s --lane "tcp:127.0.0.1=127.0.0.1:$PORT" --lane "exec:$BRAID relay 127.0.0.1:$PORT" \
      "$W/src/data.bin" "127.0.0.1:$PORT"
    check "[l['kind'] for l in s['lanes']] == ['tcp', 'tcp', 'stream']" \
          "all(l['bytes'] > 0 for l in s['lanes'])" \
          "sum(l['bytes'] for l in s['lanes']) == 48 << 20"
    ;;

  pty-slow)  # a ~1.5 Mbit/s serial-like lane (a pty) beside two fast lanes: it helps or stays out of the way
    random_file "$W/src/data.bin" $((48 << 20)) pty
    start_recv
    send --lane "tcp:127.0.0.1=127.0.0.1:$PORT" --lane "tcp:127.0.0.1=127.0.0.1:$PORT" \
      --lane "pty:$BRAID relay --rate 1.5Mbit/s 127.0.0.1:$PORT" "$W/src/data.bin" "127.0.0.1:$PORT"
    # The slow lane never holds up the end: at most its probe and a piece it
    # can finish in time, never a duplicate race it loses, no stall.
    check "[l['kind'] for l in s['lanes']] == ['tcp', 'tcp', 'tcp', 'stream']" \
          "s['lanes'][3]['bytes'] <= 2 << 20" "s['stalls'] == 0" \
          "sum(l['bytes'] for l in s['lanes']) == 48 << 20"
    ;;

  *) fail "unknown case $CASE" ;;
esac
echo "PASS [$CASE]"
