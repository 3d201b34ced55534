#!/usr/bin/env bash
# Metadata through the real `braid` binary over loopback (docs/engine.md,
# "Metadata"). One case per run: metadata.sh BRAID_BINARY CASE. Figures come
# from the reports and from stat, never from time.
#   sparse         -S: a 1 GiB file with 3 data ranges of 1 MiB arrives into a
#                  64 MiB tmpfs with the same content (sha256) and the same
#                  allocated blocks, and only its data crosses (the reports'
#                  sent_bytes); without -S the same file is refused (no space)
#   sparse-sync    -S --sync: a second run sends nothing; one changed data
#                  range sends only its chunk, and the holes stay holes
#   sparse-resume  -S: a sender killed mid-way; the same command again
#                  resumes what arrived and the file still has its holes
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace metadata
MiB=$((1 << 20))

start_recv() {
  rm -f "$W/recv.out"
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 --code meta$CODE_SUFFIX --yes --once \
    --json "$W/recv.json" --log "$W/recv.log" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

# run [send args...]: a receiver and a sender; EXPECT=N (default 0) is the
# exit status both must end with; KILL_AT=BYTES kills the sender once that
# many are acked (then only the sender's 137 is checked).
run() {
  start_recv
  local wrap=()
  if [ -n "${KILL_AT:-}" ]; then
    rm -f "$W/send.log"
    wrap=(python3 "$(dirname "$0")/kill_when.py" "$W/send.log" "$KILL_AT" --)
    set -- --rate-limit 80Mbit/s "$@"
  fi
  XDG_CONFIG_HOME=$W/scfg "${wrap[@]}" "$BRAID" send --code meta$CODE_SUFFIX --json "$W/send.json" \
    --log "$W/send.log" "$@" "127.0.0.1:$PORT" > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
  wait_recv
  if [ -z "${KILL_AT:-}" ]; then
    [ "$SEND_RC" -eq "${EXPECT:-0}" ] || fail "send exited $SEND_RC, expected ${EXPECT:-0}"
    [ "$RECV_RC" -eq "${EXPECT:-0}" ] || fail "recv exited $RECV_RC, expected ${EXPECT:-0}"
  fi
}

# json EXPR...: each must hold, with `s` the sender's report and `r` the receiver's transfer.
json() {
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

# sparse_file PATH SIZE OFFSET...: SIZE bytes of holes with 1 MiB of seeded
# data at each OFFSET (bytes).
sparse_file() {
  local path=$1 size=$2; shift 2
  truncate -s "$size" "$path"
  for at in "$@"; do
    random_file "$W/piece" $MiB "$at"
    dd if="$W/piece" of="$path" bs=1M seek=$((at / MiB)) conv=notrunc status=none
  done
  rm -f "$W/piece"
}

# same_sparse A B: same content and the same allocated blocks.
same_sparse() {
  [ "$(stat -c %s "$1")" = "$(stat -c %s "$2")" ] || fail "sizes differ: $(stat -c %s "$1") $(stat -c %s "$2")"
  [ "$(stat -c %b "$1")" = "$(stat -c %b "$2")" ] ||
    fail "allocated blocks differ: $(stat -c %b "$1") at the source, $(stat -c %b "$2") arrived (holes filled?)"
  [ "$(sha256sum < "$1")" = "$(sha256sum < "$2")" ] || fail "contents differ"
}

# small_target MiB: the receiver's target becomes a tmpfs of that size.
small_target() {
  mkdir -p "$W/small"
  mount -t tmpfs -o size="$1"m tmpfs "$W/small" 2>/dev/null || { echo "SKIP [$CASE]: cannot mount a small tmpfs (needs root)"; exit 77; }
  trap 'umount "$W/small" 2>/dev/null; cleanup' EXIT
  rmdir "$W/dst"; ln -s "$W/small" "$W/dst"
}

GiB=$((1024 * MiB))
BIG_RANGES="0 $((300 * MiB)) $((GiB - MiB))"

holes_supported() {
  truncate -s $((8 * MiB)) "$W/probe"
  [ "$(stat -c %b "$W/probe")" -lt 1024 ] || { echo "SKIP [$CASE]: the scratch file system keeps no holes"; exit 77; }
  rm -f "$W/probe"
}

case "$CASE" in
  sparse)
    holes_supported
    small_target 64
    # shellcheck disable=SC2086
    sparse_file "$W/src/disk.img" $GiB $BIG_RANGES
    EXPECT=8 run "$W/src/disk.img"   # without -S: 1 GiB does not fit
    grep -q 'space' "$W/send.err" || fail "no clear message for the refusal without -S"
    EXPECT=0 run -S "$W/src/disk.img"
    same_sparse "$W/src/disk.img" "$W/dst/disk.img"
    echo "sparse: $(stat -c %b "$W/dst/disk.img") blocks of 512 for $(stat -c %s "$W/dst/disk.img") bytes;" \
      "$(python3 -c "import json; print(json.load(open('$W/send.json'))['sent_bytes'])") bytes sent"
    json "s['bytes'] == $GiB" "s['sent_bytes'] == 3 * $MiB" "sum(l['bytes'] for l in s['lanes']) == 3 * $MiB" \
      "r['sent_bytes'] == 3 * $MiB"
    [ -z "$(find "$W/dst/" -name '.braid-*')" ] || fail "temporary files left"
    ;;

  sparse-sync)
    holes_supported
    sparse_file "$W/src/disk.img" $((256 * MiB)) 0 $((100 * MiB)) $((200 * MiB))
    run -S --sync "$W/src/disk.img"
    same_sparse "$W/src/disk.img" "$W/dst/disk.img"
    run -S --sync "$W/src/disk.img"
    json "s['sent_bytes'] == 0" "s['sync']['files_unchanged'] == 1"
    random_file "$W/piece" $MiB changed
    dd if="$W/piece" of="$W/src/disk.img" bs=1M seek=100 conv=notrunc status=none
    run -S --sync "$W/src/disk.img"
    same_sparse "$W/src/disk.img" "$W/dst/disk.img"
    json "s['sent_bytes'] == $MiB" "s['sync']['files_updated'] == 1" "s['sync']['reused_bytes'] == 2 * $MiB"
    ;;

  sparse-resume)
    holes_supported
    sparse_file "$W/src/disk.img" $((512 * MiB)) $(seq 0 $((32 * MiB)) $((511 * MiB)))  # 16 data ranges
    # The sender's progress counts holes as delivered at once (496 MiB here): kill 6 MiB of data later.
    KILL_AT=$((502 * MiB)) run -S "$W/src/disk.img"
    [ "$SEND_RC" -eq 137 ] || fail "the sender was to die of SIGKILL, it exited $SEND_RC"
    run -S "$W/src/disk.img"
    same_sparse "$W/src/disk.img" "$W/dst/disk.img"
    echo "rerun: $(python3 -c "import json; j = json.load(open('$W/send.json')); print(j['sent_bytes'], 'sent,', j['resumed_bytes'], 'resumed')")"
    json "s['resumed_bytes'] >= 4 * $MiB" "s['sent_bytes'] + s['resumed_bytes'] == 16 * $MiB"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
