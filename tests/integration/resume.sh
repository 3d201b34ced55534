#!/usr/bin/env bash
# Resume of interrupted transfers through the real `braid` binary over
# loopback. One case per run: resume.sh BRAID_BINARY CASE.
#   sender-crash   256 MiB; the sender dies (SIGKILL, test hook) after 128 MiB;
#                  the same command again resumes: identical file, resumed_bytes
#                  > 0 in both reports, well under half the file on the wire
#   recv-crash     the receiver is killed (SIGKILL) mid-transfer: what its
#                  journal had committed (durable) is resumed
#   changed        the source changes between the runs, size and mtime kept:
#                  the changed ranges are not trusted (sent again), the rest is
#                  resumed, the result is the new source
#   other-file     a different file under the same name: nothing is reused
#   small-files    many small and empty files, nested dirs: resumed, identical
#                  with modes and mtimes
#   damaged | truncated | extended | zeroed
#                  the receiver's .part is changed between the runs (20 bytes
#                  at 10 MiB; cut to 5 MiB; 1 MiB appended; replaced by a file
#                  of zeros): the held ranges are read back before the accept,
#                  what no longer matches is fetched again and reported
#                  (refetched_bytes), the result is identical
#   journal-ahead  the journal claims more than the .part holds (the .part put
#                  back to a copy from an earlier interruption): exactly the
#                  ranges missing from it are fetched again
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace resume
MiB=$((1 << 20))

ipv6_ok() { python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null; }

start_recv() {
  local listen=(--listen 127.0.0.1:0)
  ipv6_ok && listen+=(--listen '[::1]:0')
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" "${listen[@]}" --code resume-test$CODE_SUFFIX --yes --once \
    --json "$W/recv.json" --log "$W/recv.log" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

# send [args...]: the same command line every run (only the environment differs).
send() {
  # KILL_AT=BYTES: the test kills the sender (SIGKILL) once its log shows
  # that many bytes acked (kill_when.py), paced so the moment can be caught.
  local KILL_WRAP=()
  if [ -n "${KILL_AT:-}" ]; then
    rm -f "$W/send.log"
    KILL_WRAP=(python3 "$(dirname "$0")/kill_when.py" "$W/send.log" "$KILL_AT" --)
    set -- --rate-limit 400Mbit/s "$@"
  fi
  XDG_CONFIG_HOME=$W/scfg "${KILL_WRAP[@]}" "$BRAID" send --code resume-test$CODE_SUFFIX --json "$W/send.json" --log "$W/send.log" "$@" \
    "127.0.0.1:$PORT" > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
}

# Path, mode, mtime, size and SHA-256 of every entry under $1.
fingerprint() {
  (cd "$1" && find . -mindepth 1 ! -name '.braid-*' -printf '%p %y %m %T@ %s\n' | sort &&
    find . -type f ! -name '.braid-*' -print0 | sort -z | xargs -0 -r sha256sum)
}

# py EXPR...: each EXPR must hold, with `s` (send.json) and `r` (recv.json's first transfer).
check_json() {
  python3 - "$W/send.json" "$W/recv.json" "$@" <<'PY' || fail "report check failed"
import json, sys
s = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))['transfers'][0]
for expr in sys.argv[3:]:
    if not eval(expr):
        print('not true:', expr, '| send:', {k: v for k, v in s.items() if k != 'lanes'}, file=sys.stderr)
        print('wire bytes per lane:', [l['wire_bytes'] for l in s['lanes']], file=sys.stderr)
        sys.exit(1)
PY
}

wire_bytes() { python3 -c "import json; print(sum(l['wire_bytes'] for l in json.load(open('$W/send.json'))['lanes']))"; }

# First run, interrupted by the sender dying after $1 bytes were acked.
crash_sender_after() {
  local after=$1; shift
  start_recv
  KILL_AT=$after send "$@"
  [ "$SEND_RC" -eq 137 ] || fail "the sender was to die of SIGKILL, it exited $SEND_RC"
  wait_recv
  [ "$RECV_RC" -ne 0 ] || fail "the receiver reported success for an interrupted transfer"
  ls -a "$W/dst" | grep_q '^\.braid-resume-' || fail "no resume journal after the interruption"
}

# The second run: succeeds, leaves no temporary file, the tree is the source's.
rerun_identical() {
  start_recv
  send "$@"
  [ "$SEND_RC" -eq 0 ] || fail "the second run exited $SEND_RC: $(cat "$W/send.err")"
  wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
  fingerprint "$W/src" > "$W/src.fp"
  fingerprint "$W/dst" > "$W/dst.fp"
  diff "$W/src.fp" "$W/dst.fp" > "$W/diff.txt" || fail "trees differ: $(head -5 "$W/diff.txt")"
}

# The receiver's report of the first run: what it held verified when the sender died.
save_first_report() { cp "$W/recv.json" "$W/recv1.json"; }
held_first() { python3 -c "import json; print(json.load(open('$W/recv1.json'))['transfers'][0]['held_bytes'])"; }
part_file() { find "$W/dst" -name '.braid-*.part' | head -1; }

# journal_held FILE: the bytes a resume journal claims, read as
# src/engine/files/resume_journal.hpp lays it out (a record removes every
# earlier claim it overlaps; a held one then claims its range); a torn last
# record is not counted.
journal_held() {
  python3 - "$1" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
fmt = struct.unpack('>I', data[8:12])[0] if len(data) >= 12 else 0
claims = {}  # offset -> end
for at in range({1: 72, 2: 80, 3: 88}.get(fmt, len(data)), len(data) - 63, 64):
    kind, _, offset, length = struct.unpack('>BB6xQQ', data[at:at + 24])
    claims = {a: b for a, b in claims.items() if b <= offset or a >= offset + length}
    if kind == 1:
        claims[offset] = offset + length
print(sum(b - a for a, b in claims.items()))
PY
}

# damage_case NAME: a 64 MiB transfer interrupted after 40 MiB, the .part
# damaged by the case's command, then resumed; checks the report's figures.
damage_case() {
  SIZE=$((64 * MiB))
  random_file "$W/src/data.bin" $SIZE dmg
  crash_sender_after $((40 * MiB)) "$W/src/data.bin"
  save_first_report
  HELD=$(held_first)
  [ "$HELD" -ge $((32 * MiB)) ] || fail "the first run held only $HELD bytes"
  P=$(part_file)
  [ -n "$P" ] || fail "no .part file after the interruption"
  case "$1" in
    damaged) printf '%s' 'twenty bytes changed' | dd of="$P" bs=1 seek=$((10 * MiB)) conv=notrunc status=none ;;
    truncated) truncate -s $((5 * MiB + 123)) "$P" ;;
    extended) random_file "$W/junk" $MiB junk; cat "$W/junk" >> "$P" ;;
    zeroed) head -c "$(stat -c %s "$P")" /dev/zero > "$W/zeros"; mv "$W/zeros" "$P" ;;
  esac
  rerun_identical "$W/src/data.bin"
  no_temporary_files
  echo "$1: held $HELD; second run: $(python3 -c "import json; r=json.load(open('$W/recv.json'))['transfers'][0]; print('reverified', r['reverified_bytes'], 'refetched', r['refetched_bytes'], 'in', r['resume_check_seconds'], 's')")"
  check_json "r['reverified_bytes'] + r['refetched_bytes'] == $HELD" "r['resumed_bytes'] == r['reverified_bytes']" \
    "s['resumed_bytes'] == r['resumed_bytes']" \
    "sum(l['bytes'] for l in s['lanes']) == $SIZE - s['resumed_bytes']"
}

no_temporary_files() {
  local left
  left=$(find "$W/dst" -name '.braid-*')
  [ -z "$left" ] || fail "temporary files left: $left"
}

case "$CASE" in
  sender-crash)
    SIZE=$((256 * MiB))
    random_file "$W/src/big.bin" $SIZE big
    crash_sender_after $((128 * MiB)) "$W/src/big.bin"
    [ ! -e "$W/dst/big.bin" ] || fail "a partial file stands under its final name"
    rerun_identical "$W/src/big.bin"
    no_temporary_files
    WIRE=$(wire_bytes)
    echo "second run: resumed $(python3 -c "import json; print(json.load(open('$W/send.json'))['resumed_bytes'])") bytes, $WIRE bytes on the wire of $SIZE"
    check_json "s['resumed_bytes'] >= 100 * 2**20" "r['resumed_bytes'] == s['resumed_bytes']" \
      "s['resume_rejected_bytes'] == 0" "s['bytes'] == $SIZE" \
      "sum(l['wire_bytes'] for l in s['lanes']) < 0.6 * $SIZE" \
      "sum(l['bytes'] for l in s['lanes']) == s['bytes'] - s['resumed_bytes']"
    grep -q '"event":"resume"' "$W/send.log" || fail "the sender did not log the resume"
    grep -q '"event":"resume"' "$W/recv.log" || fail "the receiver did not log the resume"
    grep -q 'MiB resumed' "$W/send.out" || fail "the terminal line does not say what was resumed"
    ;;

  recv-crash)
    SIZE=$((128 * MiB))
    random_file "$W/src/big.bin" $SIZE rc
    start_recv
    # Slow enough (about 2.7 s) to kill the receiver in the middle.
    send_bg() {
      XDG_CONFIG_HOME=$W/scfg "$BRAID" send --code resume-test$CODE_SUFFIX --rate-limit 400Mbit/s "$W/src/big.bin" \
        "127.0.0.1:$PORT" > "$W/send1.out" 2> "$W/send1.err" &
      SEND_PID=$!
    }
    send_bg
    # Wait until the receiver's journal holds at least 16 MiB, then kill it.
    for _ in $(seq 100); do
      J=$(find "$W/dst" -name '.braid-resume-*' 2>/dev/null | head -1)
      [ -n "$J" ] && [ "$(journal_held "$J")" -ge $((16 * MiB)) ] && break
      sleep 0.05
    done
    kill -9 "$RECV_PID"; wait "$RECV_PID" 2>/dev/null; RECV_PID=
    wait "$SEND_PID"; rc=$?
    [ "$rc" -ne 0 ] || fail "the sender reported success although the receiver died"
    [ ! -e "$W/dst/big.bin" ] || fail "a partial file stands under its final name"
    # Read once the receiver is dead: pieces recorded between the wait and the kill count too.
    HELD=$(journal_held "$J")
    [ "$HELD" -ge $((16 * MiB)) ] || fail "the journal holds $HELD bytes only"
    rerun_identical "$W/src/big.bin"
    no_temporary_files
    # Everything the journal held, and nothing more, is resumed.
    check_json "s['resumed_bytes'] == $HELD" "r['resumed_bytes'] == s['resumed_bytes']"
    ;;

  changed)
    SIZE=$((64 * MiB))
    random_file "$W/src/data.bin" $SIZE one
    touch -d '2021-03-04 05:06:07' "$W/src/data.bin"
    crash_sender_after $((40 * MiB)) "$W/src/data.bin"
    # Change the first 8 MiB (surely held by the receiver now), keep size and mtime:
    # the offer is the same, so the receiver offers its ranges; the sender must not trust them.
    random_file "$W/changed" $((8 * MiB)) two
    dd if="$W/changed" of="$W/src/data.bin" bs=1M conv=notrunc status=none
    touch -d '2021-03-04 05:06:07' "$W/src/data.bin"
    rerun_identical "$W/src/data.bin"
    no_temporary_files
    check_json "s['resume_rejected_bytes'] >= 8 * 2**20" "s['resumed_bytes'] > 0" \
      "r['resumed_bytes'] == s['resumed_bytes']" \
      "s['resumed_bytes'] + s['resume_rejected_bytes'] <= s['bytes']"
    ;;

  other-file)
    SIZE=$((64 * MiB))
    random_file "$W/src/data.bin" $SIZE one
    crash_sender_after $((32 * MiB)) "$W/src/data.bin"
    # Another file under the same name (same size, other bytes, another mtime).
    random_file "$W/src/data.bin" $SIZE other
    touch -d '2022-01-01 00:00:00' "$W/src/data.bin"
    rerun_identical "$W/src/data.bin"
    check_json "s['resumed_bytes'] == 0" "r['resumed_bytes'] == 0" "s['resume_rejected_bytes'] == 0" \
      "sum(l['wire_bytes'] for l in s['lanes']) >= $SIZE"
    ! grep -q '"event":"resume"' "$W/recv.log" || fail "the receiver offered ranges of another file"
    ;;

  small-files)
    T=$W/src/tree
    mkdir -p "$T/a/b" "$T/empty dir"
    python3 - "$T" <<'PY'
import os, random, sys
t = sys.argv[1]
rng = random.Random(7)
for i in range(400):
    d = [t, t + '/a', t + '/a/b'][i % 3]
    p = os.path.join(d, 'f %d' % i)
    with open(p, 'wb') as f:
        f.write(rng.randbytes(0 if i % 10 == 0 else rng.randrange(1, 40000)))
    os.chmod(p, [0o644, 0o600, 0o755][i % 3])
    os.utime(p, (1600000000 + i, 1600000000 + i))
PY
    random_file "$T/a/middle.bin" $((24 * MiB)) mid
    touch -d @1500000000 "$T/empty dir"
    crash_sender_after $((12 * MiB)) "$T"
    rerun_identical "$T"
    no_temporary_files
    check_json "s['resumed_bytes'] >= 12 * 2**20" "r['resumed_bytes'] == s['resumed_bytes']" "s['files'] == 401"
    ;;

  damaged)
    damage_case damaged
    # 20 bytes at 10 MiB: the one or two pieces they touch, no more.
    check_json "20 <= r['refetched_bytes'] <= 2 * 2**20"
    grep -q '"event":"resume_mismatch"' "$W/recv.log" || fail "the receiver did not log the mismatch"
    grep -q 'fetched again' "$W/recv.err" || fail "the receiver did not say what it fetched again"
    ;;

  truncated)
    damage_case truncated
    # What lay below the cut still matches; everything above it is fetched again.
    check_json "4 * 2**20 <= r['reverified_bytes'] <= 5 * 2**20 + 123"
    grep -q '"event":"resume_part_resized"' "$W/recv.log" || fail "the cut .part was not noticed"
    ;;

  extended)
    damage_case extended
    # Bytes past the file's end mean nothing: cut off, every held range still matches.
    check_json "r['refetched_bytes'] == 0"
    grep -q '"event":"resume_part_resized"' "$W/recv.log" || fail "the extended .part was not noticed"
    ;;

  zeroed)
    damage_case zeroed
    check_json "r['reverified_bytes'] == 0" "s['resumed_bytes'] == 0"
    ;;

  journal-ahead)
    SIZE=$((64 * MiB))
    random_file "$W/src/data.bin" $SIZE ahead
    crash_sender_after $((16 * MiB)) "$W/src/data.bin"
    save_first_report
    HELD1=$(held_first)
    cp "$(part_file)" "$W/part-after-first-run"
    crash_sender_after $((16 * MiB)) "$W/src/data.bin"
    save_first_report
    HELD2=$(held_first)
    [ "$HELD2" -ge $((HELD1 + 8 * MiB)) ] || fail "the second interruption held $HELD2 bytes (first: $HELD1)"
    # The journal of the second run with the .part of the first: it claims $HELD2 bytes, the .part holds $HELD1.
    cp "$W/part-after-first-run" "$(part_file)"
    rerun_identical "$W/src/data.bin"
    no_temporary_files
    check_json "r['reverified_bytes'] == $HELD1" "r['refetched_bytes'] == $HELD2 - $HELD1" \
      "s['resumed_bytes'] == $HELD1"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
