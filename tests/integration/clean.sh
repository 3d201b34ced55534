#!/usr/bin/env bash
# What interrupted transfers leave in a target, and who removes it. One case
# per run: clean.sh BRAID_BINARY CASE.
#   command    two interrupted transfers, one left alone for 8 days (its
#              files backdated), one just now: `braid clean --dry-run`
#              lists the old one and removes nothing; `braid clean` removes
#              it and keeps the young one (it may still resume — and does)
#   recv-start the same, cleaned by the receiver at its start (default
#              --clean-after 7d); `--clean-after off` removes nothing
#   running    a transfer in progress: `braid clean --older-than 0` keeps
#              its files (its journal is locked), and it completes verified
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace clean
MiB=$((1 << 20))

start_recv() {
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 --code clean-test$CODE_SUFFIX --yes --once \
    --json "$W/recv.json" --log "$W/recv.log" "$@" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

send() {
  # KILL_AT=BYTES: the test kills the sender (SIGKILL) once its log shows
  # that many bytes acked (kill_when.py), paced so the moment can be caught.
  local KILL_WRAP=()
  if [ -n "${KILL_AT:-}" ]; then
    rm -f "$W/send.log"
    KILL_WRAP=(python3 "$(dirname "$0")/kill_when.py" "$W/send.log" "$KILL_AT" --)
    set -- --rate-limit 400Mbit/s --log "$W/send.log" "$@"
  fi
  XDG_CONFIG_HOME=$W/scfg "${KILL_WRAP[@]}" "$BRAID" send --code clean-test$CODE_SUFFIX --json "$W/send.json" "$@" "127.0.0.1:$PORT" \
    > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
}

# interrupted FILE: a transfer of FILE that dies (sender SIGKILL) after 8 MiB; prints its tag.
interrupted() {
  local before after
  before=$(ls -a "$W/dst" | grep '^\.braid-resume-' | sort)
  start_recv
  KILL_AT=$((8 * MiB)) send "$1"
  [ "$SEND_RC" -eq 137 ] || fail "the sender was to die, it exited $SEND_RC"
  wait_recv
  after=$(ls -a "$W/dst" | grep '^\.braid-resume-' | sort)
  comm -13 <(echo "$before") <(echo "$after") | sed 's/^\.braid-resume-//'
}

debris_of() { find "$W/dst" -name ".braid-*$1*"; }

two_leftovers() {
  random_file "$W/src/old.bin" $((32 * MiB)) old
  random_file "$W/src/young.bin" $((32 * MiB)) young
  OLD=$(interrupted "$W/src/old.bin")
  YOUNG=$(interrupted "$W/src/young.bin")
  [ -n "$OLD" ] && [ -n "$YOUNG" ] && [ "$OLD" != "$YOUNG" ] || fail "expected two journals ($OLD, $YOUNG)"
  [ -n "$(debris_of "$OLD")" ] && [ -n "$(debris_of "$YOUNG")" ] || fail "no leftovers to clean"
  debris_of "$OLD" | xargs touch -h -d '8 days ago'
}

young_resumes() {
  start_recv
  send "$W/src/young.bin"
  [ "$SEND_RC" -eq 0 ] || fail "the young transfer did not complete: $(cat "$W/send.err")"
  wait_recv
  cmp "$W/src/young.bin" "$W/dst/young.bin" || fail "young.bin differs"
  python3 -c "import json, sys; sys.exit(0 if json.load(open('$W/send.json'))['resumed_bytes'] > 0 else 1)" ||
    fail "the young transfer did not resume"
}

case "$CASE" in
  command)
    "$BRAID" clean "$W/dst" --older-than 3 > /dev/null 2> "$W/bad.err"; rc=$?
    [ "$rc" -eq 2 ] && grep -q 'expected an age' "$W/bad.err" || fail "--older-than 3: exit $rc, $(cat "$W/bad.err")"
    "$BRAID" clean "$W/missing" > /dev/null 2> "$W/bad.err"; rc=$?
    [ "$rc" -eq 1 ] && [ "$(wc -l < "$W/bad.err")" -eq 1 ] || fail "clean of a missing dir: exit $rc, $(cat "$W/bad.err")"
    two_leftovers
    "$BRAID" clean "$W/dst" --dry-run > "$W/clean.out" 2> "$W/clean.err" || fail "clean --dry-run failed"
    grep -q "would remove .braid-resume-$OLD" "$W/clean.out" || fail "the dry run does not list the old journal: $(cat "$W/clean.out")"
    grep -q "kept .braid-resume-$YOUNG: .*may still resume" "$W/clean.out" || fail "the dry run does not say why the young one stays"
    [ -n "$(debris_of "$OLD")" ] || fail "the dry run removed something"
    "$BRAID" clean "$W/dst" > "$W/clean.out" 2> "$W/clean.err" || fail "clean failed: $(cat "$W/clean.err")"
    [ -z "$(debris_of "$OLD")" ] || fail "the old transfer's files are still there: $(debris_of "$OLD")"
    [ -n "$(debris_of "$YOUNG")" ] || fail "the young transfer's files were removed"
    grep -q "removed 2 files" "$W/clean.out" || fail "the summary: $(tail -1 "$W/clean.out")"
    young_resumes
    ;;

  recv-start)
    two_leftovers
    start_recv --clean-after off
    kill "$RECV_PID"; wait "$RECV_PID" 2>/dev/null; RECV_PID=
    [ -n "$(debris_of "$OLD")" ] || fail "--clean-after off removed something"
    start_recv
    for _ in $(seq 50); do grep -q 'leftover' "$W/recv.err" && break; sleep 0.05; done
    grep -q 'removed 2 leftover files .* of 1 interrupted transfers not resumed for 7d' "$W/recv.err" ||
      fail "the receiver did not say what it removed: $(cat "$W/recv.err")"
    [ -z "$(debris_of "$OLD")" ] || fail "the old transfer's files are still there"
    [ -n "$(debris_of "$YOUNG")" ] || fail "the young transfer's files were removed"
    grep -q '"event":"debris_removed"' "$W/recv.log" || fail "the log does not list what was removed"
    kill "$RECV_PID"; wait "$RECV_PID" 2>/dev/null; RECV_PID=
    young_resumes
    ;;

  running)
    random_file "$W/src/big.bin" $((128 * MiB)) run
    start_recv
    XDG_CONFIG_HOME=$W/scfg "$BRAID" send --code clean-test$CODE_SUFFIX --rate-limit 400Mbit/s "$W/src/big.bin" "127.0.0.1:$PORT" \
      > "$W/send.out" 2> "$W/send.err" &
    SEND_PID=$!
    for _ in $(seq 100); do [ -n "$(find "$W/dst" -name '.braid-resume-*')" ] && break; sleep 0.05; done
    sleep 0.5
    [ -n "$(find "$W/dst" -name '.braid-*.part')" ] || fail "no transfer running"
    "$BRAID" clean "$W/dst" --older-than 0 > "$W/clean.out" 2> "$W/clean.err" || fail "clean failed"
    grep -q "kept .*: in use: a running transfer" "$W/clean.out" || fail "the running transfer was not kept: $(cat "$W/clean.out")"
    grep -q "^removed" "$W/clean.out" && fail "removed files of a running transfer: $(cat "$W/clean.out")"
    wait "$SEND_PID"; rc=$?
    [ "$rc" -eq 0 ] || fail "the transfer failed after the clean: $(cat "$W/send.err")"
    wait_recv
    cmp "$W/src/big.bin" "$W/dst/big.bin" || fail "big.bin differs"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
