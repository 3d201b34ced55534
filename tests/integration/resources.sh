#!/usr/bin/env bash
# The receiver's bounded resources, against the real binary over loopback
# (issue 11). One case per run: resources.sh BRAID_BINARY CASE.
#   flood       20,000 connect-and-reset connections and 500 idle ones held
#               open (flood.py) while a 96 MiB, 4-lane transfer runs: the
#               receiver lives, the file is identical, its threads stay under
#               a constant while the flood runs, its fds return to baseline
#   sequential  300 sessions one after another against one receiver started
#               under `ulimit -n 64`: all succeed; fds and threads after = before
#   dead-lane   a lane through a relay (tcp_proxy.py) whose path dies after
#               its join, still open: the sender exits within ~1 s of its
#               result (the `done` line of its log); before, 2 s or more
#   dead-lane-mid-piece  the same with the relay SIGSTOPped mid-piece (its
#               writer stuck in a send); skipped, with the measured gap, while
#               the sender's send() still waits for such a writer
#   emfile      a receiver whose fd limit is cut to 40 under it (prlimit),
#               flooded: accept fails with EMFILE; the receiver logs it once
#               per episode, does not spin, and serves a session afterwards
# Thread and fd counts come from /proc/PID/status and /proc/PID/fd.
set -uo pipefail
BRAID=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
workspace resources

threads_of() { awk '/^Threads:/ {print $2}' "/proc/$1/status"; }
fds_of() { ls "/proc/$1/fd" | wc -l; }
cpu_ticks_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, clock ticks

# start_recv NOFILE [extra recv args...]: the receiver on 127.0.0.1 (a free
# port) under `ulimit -n NOFILE` (0: unchanged); sets RECV_PID and PORT.
start_recv() {
  local nofile=$1
  shift
  local limit="true"
  [ "$nofile" -gt 0 ] && limit="ulimit -n $nofile"
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  XDG_CONFIG_HOME=$W/rcfg bash -c "$limit && exec \"\$0\" \"\$@\"" "$BRAID" recv --dir "$W/dst" \
    --listen 127.0.0.1:0 --log "$W/recv.log" "$@" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

# send [args...]: runs the sender, sets SEND_RC.
send() {
  XDG_CONFIG_HOME=$W/scfg "$BRAID" send --log "$W/send.log" "$@" > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
}

json_field() { python3 -c "import json,sys; print(json.loads(open('$1').read())['$2'])"; }

# wait_for_baseline PID FDS THREADS SECONDS: true once both are back (or below).
wait_for_baseline() {
  local i
  for i in $(seq $(($4 * 10))); do
    [ "$(fds_of "$1")" -le "$2" ] && [ "$(threads_of "$1")" -le "$3" ] && return 0
    sleep 0.1
  done
  return 1
}

case "$CASE" in
  flood)
    random_file "$W/src/big.bin" $((96 << 20)) flood
    start_recv 0 --code flood-code$CODE_SUFFIX --yes
    sleep 0.3
    BASE_FDS=$(fds_of "$RECV_PID")
    BASE_THREADS=$(threads_of "$RECV_PID")
    python3 "$HERE/flood.py" --port "$PORT" --resets 20000 --idle 500 --min-seconds 8 --max-seconds 150 \
      --pid "$RECV_PID" --progress "$W/flood.progress" > "$W/flood.json" 2> "$W/flood.err" &
    FLOOD_PID=$!
    for _ in $(seq 300); do [ "$(cat "$W/flood.progress" 2>/dev/null || echo 0)" -ge 1000 ] && break; sleep 0.05; done
    AT_START=$(cat "$W/flood.progress" 2>/dev/null || echo 0)
    # ~4 s at the rate cap: the transfer runs inside the flood (8 s or more).
    send --code flood-code$CODE_SUFFIX --streams 4 --rate-limit 200Mbit/s "$W/src/big.bin" "127.0.0.1:$PORT"
    AT_END=$(cat "$W/flood.progress" 2>/dev/null || echo 0)
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC during the flood"
    cmp -s "$W/src/big.bin" "$W/dst/big.bin" || fail "the file arrived different"
    wait "$FLOOD_PID" || fail "flood.py failed: $(cat "$W/flood.err")"
    kill -0 "$RECV_PID" 2>/dev/null || fail "the receiver died under the flood"
    RESETS=$(json_field "$W/flood.json" resets)
    IDLE=$(json_field "$W/flood.json" idle_opened)
    MAX_THREADS=$(json_field "$W/flood.json" max_threads)
    MAX_FDS=$(json_field "$W/flood.json" max_fds)
    echo "flood: $(cat "$W/flood.json"); transfer ran from reset $AT_START to $AT_END;" \
      "baseline fds $BASE_FDS threads $BASE_THREADS"
    [ "$RESETS" -eq 20000 ] || fail "only $RESETS of 20000 connections were made"
    [ "$IDLE" -ge 500 ] || fail "only $IDLE idle connections were opened"
    [ "$AT_START" -lt 20000 ] && [ "$AT_END" -gt "$AT_START" ] || fail "the transfer did not overlap the flood"
    [ "$MAX_THREADS" -gt 0 ] || fail "no thread count was sampled"
    # 1 accept loop + 4 handshake workers + one session (control, writer, ≤ 5 lane readers),
    # whatever the connection count (before: a thread per connection, 32,798 at the abort).
    [ "$MAX_THREADS" -le 40 ] || fail "the receiver reached $MAX_THREADS threads under the flood"
    wait_for_baseline "$RECV_PID" "$BASE_FDS" "$BASE_THREADS" 12 ||
      fail "fds $(fds_of "$RECV_PID") (baseline $BASE_FDS), threads $(threads_of "$RECV_PID") (baseline $BASE_THREADS) after the flood"
    ;;

  sequential)
    head -c 65536 /dev/urandom > "$W/src/small.bin"
    start_recv 64 --code seq-code$CODE_SUFFIX --yes
    sleep 0.3
    BASE_FDS=$(fds_of "$RECV_PID")
    BASE_THREADS=$(threads_of "$RECV_PID")
    MAX_FDS=$BASE_FDS
    for i in $(seq 300); do
      send --code seq-code$CODE_SUFFIX "$W/src/small.bin" "127.0.0.1:$PORT"
      [ "$SEND_RC" -eq 0 ] || fail "session $i of 300 failed (send exited $SEND_RC)"
      cmp -s "$W/src/small.bin" "$W/dst/small.bin" || fail "session $i: the file arrived different"
      rm -f "$W/dst/small.bin"
      f=$(fds_of "$RECV_PID")
      [ "$f" -gt "$MAX_FDS" ] && MAX_FDS=$f
    done
    kill -0 "$RECV_PID" 2>/dev/null || fail "the receiver died"
    wait_for_baseline "$RECV_PID" "$BASE_FDS" "$BASE_THREADS" 5 ||
      fail "after 300 sessions: fds $(fds_of "$RECV_PID") (before $BASE_FDS), threads $(threads_of "$RECV_PID") (before $BASE_THREADS)"
    echo "sequential: 300 sessions under ulimit -n 64; fds before $BASE_FDS, after $(fds_of "$RECV_PID")," \
      "highest seen between sessions $MAX_FDS; threads before $BASE_THREADS, after $(threads_of "$RECV_PID")"
    ;;

  dead-lane | dead-lane-mid-piece)
    random_file "$W/src/d.bin" $((32 << 20)) dead
    start_recv 0 --code dead-code$CODE_SUFFIX --yes --once
    if [ "$CASE" = dead-lane ]; then
      # The relayed lane's path dies right after its join, at its first data
      # frame: its writer handed a 256 KiB piece to the kernel and waits for
      # an ack that never comes; nothing is closed. Lane 0 carries the rest.
      python3 "$HERE/tcp_proxy.py" "$PORT" "$W/proxy.port" --freeze-after 100 2> "$W/proxy.err" &
      SEND_ARGS=(--chunk 256KiB)
    else
      # The relay is SIGSTOPped mid-transfer: the lane's writer is stuck in a
      # send of a 1 MiB piece (zero window) until TCP_USER_TIMEOUT.
      python3 "$HERE/tcp_proxy.py" "$PORT" "$W/proxy.port" 2> "$W/proxy.err" &
      SEND_ARGS=(--rate-limit 64Mbit/s)
    fi
    PROXY_PID=$!
    trap 'kill -CONT $PROXY_PID 2>/dev/null; kill $PROXY_PID 2>/dev/null; cleanup' EXIT
    for _ in $(seq 100); do [ -s "$W/proxy.port" ] && break; sleep 0.05; done
    PP=$(cat "$W/proxy.port" 2>/dev/null) || fail "the relay did not start"
    # Lane 0 direct, lane 1 through the relay.
    T0=$(date +%s.%N)
    XDG_CONFIG_HOME=$W/scfg "$BRAID" send --code dead-code$CODE_SUFFIX --lane "tcp:127.0.0.1=127.0.0.1:$PP" "${SEND_ARGS[@]}" \
      --log "$W/send.log" --json "$W/send.json" "$W/src/d.bin" "127.0.0.1:$PORT" > "$W/send.out" 2> "$W/send.err" &
    SEND_PID=$!
    if [ "$CASE" = dead-lane-mid-piece ]; then
      for _ in $(seq 100); do grep -q '"lane_open".*"lane":1' "$W/send.log" 2>/dev/null && break; sleep 0.05; done
      sleep 1.5
      kill -STOP "$PROXY_PID"
    fi
    wait "$SEND_PID"
    SEND_RC=$?
    T1=$(date +%s.%N)
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    # The relayed lane joined: the receiver took it. (The sender counts a
    # lane open at its welcome, which a relay frozen at the lane's first
    # data frame never brings back now that pieces follow the join at once.)
    grep -q '"lane_open".*"lane":1' "$W/recv.log" || fail "the relayed lane did not open"
    # When every piece was acked ("verifying": done goes out) and when the
    # result came ("done"), on the log's clock, which starts with the process
    # (within a few ms of T0).
    read -r ACKED_T DONE_T < <(python3 -c "
import json
acked = done = None
for line in open('$W/send.log'):
    e = json.loads(line)
    if e.get('event') == 'status' and e.get('status') == 'verifying' and acked is None: acked = e['t']
    if e.get('event') == 'status' and e.get('status') == 'done' and done is None: done = e['t']
print(acked, done)")
    [ "$DONE_T" != None ] && [ "$ACKED_T" != None ] || fail "no 'verifying' or 'done' in the sender's log"
    GAP=$(python3 -c "print(round($T1 - $T0 - $DONE_T, 3))")
    WAIT=$(python3 -c "print(round($DONE_T - $ACKED_T, 3))")
    echo "$CASE: every piece acked at ${ACKED_T} s, the result ${WAIT} s later, the process ended ${GAP} s after it"
    # The result never waits on the dead lane: done goes on a lane heard
    # from lately, and no writer stuck on the dead path holds send() up.
    python3 -c "import sys; sys.exit(0 if $WAIT <= 1.5 else 1)" ||
      fail "the result came ${WAIT} s after every piece was acked (a dead lane held it up)"
    python3 -c "import sys; sys.exit(0 if $GAP <= 1.5 else 1)" ||
      fail "the sender ended ${GAP} s after its result (a dead lane held it up)"
    kill -CONT "$PROXY_PID"
    kill "$PROXY_PID"
    wait_recv
    [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    cmp -s "$W/src/d.bin" "$W/dst/d.bin" || fail "the file arrived different"
    ;;

  emfile)
    head -c 65536 /dev/urandom > "$W/src/small.bin"
    command -v prlimit > /dev/null || { echo "SKIP [$CASE]: needs prlimit (util-linux) to lower the receiver's fd limit"; exit 77; }
    start_recv 1024 --code emfile-code$CODE_SUFFIX --yes
    sleep 0.3
    BASE_FDS=$(fds_of "$RECV_PID")
    # Its caps on waiting connections came from 1024 fds (256 pending): with
    # the limit cut to 40 under it (as when sessions hold most fds), a flood
    # of silent connections makes accept fail with EMFILE.
    prlimit --pid "$RECV_PID" --nofile=40:40 || fail "prlimit failed"
    TICKS0=$(cpu_ticks_of "$RECV_PID")
    python3 "$HERE/flood.py" --port "$PORT" --resets 2000 --idle 100 --hello-idle 20 --min-seconds 3 \
      --max-seconds 60 --pid "$RECV_PID" > "$W/flood.json" 2> "$W/flood.err" ||
      fail "flood.py failed: $(cat "$W/flood.err")"
    TICKS1=$(cpu_ticks_of "$RECV_PID")
    kill -0 "$RECV_PID" 2>/dev/null || fail "the receiver died out of fds"
    wait_for_baseline "$RECV_PID" "$BASE_FDS" 999 15 || fail "fds $(fds_of "$RECV_PID") after the flood (baseline $BASE_FDS)"
    # The episode ends (accept_resumed) once a pause is over and the backlog is drained.
    for _ in $(seq 30); do
      [ "$(grep -c '"accept_resumed"' "$W/recv.log")" -ge "$(grep -c '"accept_paused"' "$W/recv.log")" ] && break
      sleep 0.1
    done
    PAUSES=$(grep -c '"accept_paused"' "$W/recv.log")
    [ "$(grep -c '"accept_resumed"' "$W/recv.log")" -eq "$PAUSES" ] || fail "an episode of failing accepts never ended"
    SHED=$(python3 -c "
import json
print(sum(json.loads(l).get('shed', 0) for l in open('$W/recv.log') if '\"accept_resumed\"' in l))")
    grep "accept_" "$W/recv.log"
    echo "emfile: $(cat "$W/flood.json"); accept_paused $PAUSES times, $SHED connections shed with the reserve fd;" \
      "receiver CPU $((TICKS1 - TICKS0)) ticks"
    [ "$PAUSES" -ge 1 ] || fail "accept never ran out of fds (the case did not test what it should)"
    # Once per episode, never per failed accept (each episode lasts until an accept succeeds).
    [ "$PAUSES" -le 100 ] || fail "accept_paused logged $PAUSES times"
    STDERR_LINES=$(grep -c "cannot accept connections" "$W/recv.err")
    [ "$STDERR_LINES" -eq "$PAUSES" ] || fail "$STDERR_LINES stderr lines for $PAUSES episodes: $(grep "cannot accept connections" "$W/recv.err"; grep accept_ "$W/recv.log")"
    # No busy loop: one spinning core is ~100 ticks a second.
    FLOOD_S=$(json_field "$W/flood.json" seconds)
    python3 -c "import sys; sys.exit(0 if $((TICKS1 - TICKS0)) <= 30 * $FLOOD_S else 1)" ||
      fail "the receiver used $((TICKS1 - TICKS0)) CPU ticks in ${FLOOD_S} s: a busy loop?"
    send --code emfile-code$CODE_SUFFIX "$W/src/small.bin" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "no session after the fds came back (send exited $SEND_RC)"
    cmp -s "$W/src/small.bin" "$W/dst/small.bin" || fail "the file arrived different"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
