#!/usr/bin/env bash
# SIGINT and SIGTERM through the real `braid` binary over loopback. One case
# per run: signals.sh BRAID_BINARY CASE.
#   recv-term | recv-int   the receiver is signalled mid-transfer: it exits
#                          143/130, writes --json (status "interrupted", the
#                          bytes it holds verified) and --log, says how to
#                          resume; the sender says "interrupted" too; a
#                          receiver started again at once resumes: no more
#                          than one piece per lane of what was held is sent again
#   send-term | send-int   the same for the sender (its --json status
#                          "interrupted", exit 143/130, "run the same command
#                          again to resume"); the same receiver (still
#                          running) takes the same command again at once
#   recv-twice             two SIGTERMs in a row: the second ends the receiver
#                          at once, still 143; the next run still resumes right
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace signals
MiB=$((1 << 20))
SIZE=$((256 * MiB))
CHUNK=$MiB

# A background job of a script starts with SIGINT ignored; the test wants it as a terminal would deliver it.
# (exec: the background job is then braid itself, so $! is its pid.)
sigint_default() { exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }

# start_recv [--once]: a receiver in the background (RECV_PID, PORT).
start_recv() {
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  sigint_default env XDG_CONFIG_HOME="$W/rcfg" "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 --code sig-test$CODE_SUFFIX --yes "$@" \
    --json "$W/recv.json" --log "$W/recv.log" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

# send_bg TAG [args]: a rate-limited sender in the background (SEND_PID), slow enough to be signalled mid-way.
send_bg() {
  local tag=$1; shift
  sigint_default env XDG_CONFIG_HOME="$W/scfg" "$BRAID" send --code sig-test$CODE_SUFFIX --json "$W/$tag.json" --log "$W/$tag.log" \
    --rate-limit 400Mbit/s "$@" "$W/src/big.bin" "127.0.0.1:$PORT" > "$W/$tag.out" 2> "$W/$tag.err" &
  SEND_PID=$!
}

send_fg() {
  XDG_CONFIG_HOME=$W/scfg "$BRAID" send --code sig-test$CODE_SUFFIX --json "$W/send2.json" --log "$W/send2.log" \
    "$W/src/big.bin" "127.0.0.1:$PORT" > "$W/send2.out" 2> "$W/send2.err"
  SEND_RC=$?
}

# Waits until at least $1 bytes are acked (the sender's progress events: every 10 %).
wait_progress() {
  local pct=$1 log=$2
  for _ in $(seq 300); do
    grep -q "\"percent\":$pct" "$log" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "the transfer did not reach $pct %"
}

# Exit status of a background process, waiting at most 20 s.
wait_exit() {
  local pid=$1 i
  for i in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && { kill -9 "$pid"; fail "pid $pid did not exit within 20 s of the signal"; }
  wait "$pid"
}

py() { python3 -c "import json, sys; $1"; }

check() { python3 - "$@" <<'PY' || fail "report check failed"
import json, sys
for expr in sys.argv[1:]:
    if not eval(expr, {'json': json, 'load': lambda p: json.load(open(p))}):
        print('not true:', expr, file=sys.stderr)
        sys.exit(1)
PY
}

identical() {
  cmp "$W/src/big.bin" "$W/dst/big.bin" || fail "the received file differs from the source"
  [ -z "$(find "$W/dst" -name '.braid-*')" ] || fail "temporary files left: $(find "$W/dst" -name '.braid-*')"
}

random_file "$W/src/big.bin" $SIZE sig

case "$CASE" in
  recv-term|recv-int|recv-twice)
    SIG=TERM; RC=143
    [ "$CASE" = recv-int ] && { SIG=INT; RC=130; }
    start_recv --once
    send_bg send1
    wait_progress 20 "$W/send1.log"
    kill -$SIG "$RECV_PID"
    [ "$CASE" = recv-twice ] && kill -TERM "$RECV_PID"
    wait_exit "$RECV_PID"; rc=$?; RECV_PID=
    [ "$rc" -eq $RC ] || fail "the receiver exited $rc on SIG$SIG, not $RC"
    wait_exit "$SEND_PID"; src=$?
    [ "$src" -ne 0 ] || fail "the sender reported success for an interrupted transfer"
    [ ! -e "$W/dst/big.bin" ] || fail "a partial file stands under its final name"
    if [ "$CASE" != recv-twice ]; then
      grep -q 'interrupted' "$W/send1.err" || fail "the sender did not say the receiver was interrupted"
      grep -q 'run the same send again to resume' "$W/recv.err" || fail "the receiver did not say how to resume"
      grep -q '"status":"interrupted"' "$W/recv.log" || fail "the receiver's log does not say interrupted"
      grep -q '"reason":"interrupted"' "$W/recv.log" || fail "the receiver's lanes did not close as interrupted"
      check "load('$W/recv.json')['status'] == 'interrupted'" "load('$W/recv.json')['exit_code'] == $RC" \
        "load('$W/recv.json')['transfers'][0]['status'] == 'interrupted'" \
        "load('$W/recv.json')['transfers'][0]['held_bytes'] >= 32 * 2**20"
      HELD=$(py "print(json.load(open('$W/recv.json'))['transfers'][0]['held_bytes'])")
    else
      HELD=0  # the second signal may come before the report: nothing to compare
    fi
    cp "$W/recv.json" "$W/recv1.json"
    # At once: a new receiver, the same send.
    start_recv --once
    send_fg
    [ "$SEND_RC" -eq 0 ] || fail "the re-run exited $SEND_RC: $(cat "$W/send2.err")"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "the re-run's receiver exited $RECV_RC"
    identical
    LANES=$(py "print(len(json.load(open('$W/send2.json'))['lanes']))")
    echo "held at the signal $HELD; re-run: resumed $(py "print(json.load(open('$W/send2.json'))['resumed_bytes'])"), $LANES lanes"
    check "sum(l['bytes'] for l in load('$W/send2.json')['lanes']) <= $SIZE - $HELD + $LANES * $CHUNK" \
      "load('$W/send2.json')['resumed_bytes'] >= $HELD - $LANES * $CHUNK"
    ;;

  send-term|send-int)
    SIG=TERM; RC=143
    [ "$CASE" = send-int ] && { SIG=INT; RC=130; }
    start_recv
    send_bg send1
    wait_progress 20 "$W/send1.log"
    kill -$SIG "$SEND_PID"
    wait_exit "$SEND_PID"; rc=$?
    [ "$rc" -eq $RC ] || fail "the sender exited $rc on SIG$SIG, not $RC"
    grep -q 'interrupted: run the same command again to resume' "$W/send1.err" || fail "the sender did not say how to resume"
    grep -q '"status":"interrupted"' "$W/send1.log" || fail "the sender's log does not say interrupted"
    check "load('$W/send1.json')['status'] == 'interrupted'" "load('$W/send1.json')['exit_code'] == $RC" \
      "load('$W/send1.json')['bytes'] >= 32 * 2**20"
    # Everything acked was verified by the receiver, and committed when it heard why.
    HELD=$(py "print(json.load(open('$W/send1.json'))['bytes'])")
    for _ in $(seq 50); do grep -q 'the sender ended the session: interrupted' "$W/recv.err" && break; sleep 0.1; done
    grep -q 'the sender ended the session: interrupted' "$W/recv.err" || fail "the receiver did not say the sender was interrupted"
    # At once, to the same receiver (its session of the first run lets the journal go as it ends).
    send_fg
    [ "$SEND_RC" -eq 0 ] || fail "the immediate re-run exited $SEND_RC: $(cat "$W/send2.err")"
    identical
    LANES=$(py "print(len(json.load(open('$W/send2.json'))['lanes']))")
    echo "acked at the signal $HELD; re-run: resumed $(py "print(json.load(open('$W/send2.json'))['resumed_bytes'])"), $LANES lanes"
    check "sum(l['bytes'] for l in load('$W/send2.json')['lanes']) <= $SIZE - $HELD + $LANES * $CHUNK"
    kill -TERM "$RECV_PID"
    wait_exit "$RECV_PID"; rc=$?; RECV_PID=
    [ "$rc" -eq 143 ] || fail "the idle receiver exited $rc on SIGTERM"
    check "load('$W/recv.json')['status'] == 'interrupted'"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
