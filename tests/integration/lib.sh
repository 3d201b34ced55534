# What every integration script of the real binary shares: a scratch
# workspace (tmpfs when there is one) with its own XDG_CONFIG_HOME per side,
# removed at exit together with a receiver still running; `fail` with the
# tails of what the run printed; waiting for the receiver; seeded data.
# Sourced after BRAID and CASE are set: `. "$(dirname "$0")/lib.sh"; workspace NAME`.

# Test pairing codes are a name plus this: a weak --code is refused (exit 2,
# security/code_strength.h), and 20 random-looking characters pass.
CODE_SUFFIX=-Vd7q2Xk9Lw4pRz8mTb3N

# `producer | grep_q PATTERN` where `grep -q` would do: under pipefail a
# grep -q that exits at its first match leaves a producer still writing to
# die of SIGPIPE, and the pipeline reads as "no match" (a netlab test
# skipped itself this way on `braid send --help`). grep_q reads it all.
grep_q() { grep "$@" >/dev/null; }

# workspace NAME: sets W (src, dst, rcfg, scfg inside) and the cleanup trap.
workspace() {
  local base=/tmp
  [ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
  W=$(mktemp -d "$base/braid-$1.XXXXXX")
  RECV_PID=
  trap cleanup EXIT
  mkdir -p "$W/src" "$W/dst" "$W/rcfg" "$W/scfg"
}

cleanup() {
  stop_proxies
  [ -n "$RECV_PID" ] && kill "$RECV_PID" 2>/dev/null
  rm -rf "$W"
}

fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in "$W"/*.err "$W"/*.out "$W"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}

# Waits (up to 60 s) for the receiver started in the background; sets RECV_RC.
wait_recv() {
  local i
  for i in $(seq 600); do kill -0 "$RECV_PID" 2>/dev/null || break; sleep 0.1; done
  wait "$RECV_PID"; RECV_RC=$?; RECV_PID=
}

# pair_start_recv: a `recv --once` into $W/dst with code $PAIR_CODE, its
# reports in $W/recv.{json,log,out,err}; sets RECV_PID and PORT.
pair_start_recv() {
  rm -f "$W/recv.out"
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 --code "$PAIR_CODE" --yes --once \
    --json "$W/recv.json" --log "$W/recv.log" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

# pair_run [send args...]: one whole run, a receiver for it and the sender;
# both must end with EXPECT (default 0). KILL_AT=BYTES kills the sender once
# that many are acked (rate-limited to KILL_RATE, default 400Mbit/s; then
# only SEND_RC is set, 137).
pair_run() {
  pair_start_recv
  local wrap=()
  if [ -n "${KILL_AT:-}" ]; then
    rm -f "$W/send.log"
    wrap=(python3 "$(dirname "${BASH_SOURCE[0]}")/kill_when.py" "$W/send.log" "$KILL_AT" --)
    set -- --rate-limit "${KILL_RATE:-400Mbit/s}" "$@"
  fi
  XDG_CONFIG_HOME=$W/scfg "${wrap[@]}" "$BRAID" send --code "$PAIR_CODE" --json "$W/send.json" \
    --log "$W/send.log" "$@" "127.0.0.1:$PORT" > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
  wait_recv
  if [ -z "${KILL_AT:-}" ]; then
    [ "$SEND_RC" -eq "${EXPECT:-0}" ] || fail "send exited $SEND_RC, expected ${EXPECT:-0}"
    [ "$RECV_RC" -eq "${EXPECT:-0}" ] || fail "recv exited $RECV_RC, expected ${EXPECT:-0}"
  fi
}

# report_check EXPR...: each Python expression must hold, with `s` the
# sender's --json ($W/send.json) and `r` the receiver's first transfer
# ($W/recv.json); else fail, printing the sender's report.
report_check() {
  python3 - "$W/send.json" "$W/recv.json" "$@" <<'PY' || fail "report check failed"
import json, sys
s = json.load(open(sys.argv[1]))
rj = json.load(open(sys.argv[2]))
r = rj['transfers'][0] if rj.get('transfers') else {}
for expr in sys.argv[3:]:
    if not eval(expr):
        print('not true:', expr, '| send:', {k: v for k, v in s.items() if k != 'lanes'}, file=sys.stderr)
        sys.exit(1)
PY
}

# A seeded pseudo-random file of $2 bytes (AES-CTR keystream: fast, not sparse).
random_file() {
  head -c "$2" /dev/zero | openssl enc -aes-128-ctr -nosalt -pass "pass:$3" -pbkdf2 2>/dev/null > "$1"
}

# start_proxy [faults...]: a fault proxy (fault_proxy.py) in front of the
# receiver's 127.0.0.1:$PORT; sets PROXY (its port). Faults come from
# outside the binary, as a network or an attacker would cause them.
PROXY_PIDS=()
start_proxy() {
  rm -f "$W/proxy.port"
  python3 "$(dirname "$0")/fault_proxy.py" "$W/proxy.port" "127.0.0.1:$PORT" "$@" 2> "$W/proxy.err" &
  PROXY_PIDS+=($!)
  local _
  for _ in $(seq 100); do [ -s "$W/proxy.port" ] && break; sleep 0.05; done
  PROXY=$(cat "$W/proxy.port" 2>/dev/null)
  [ -n "$PROXY" ] || fail "the fault proxy did not start"
}
stop_proxies() {
  local p
  for p in "${PROXY_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  PROXY_PIDS=()
}
