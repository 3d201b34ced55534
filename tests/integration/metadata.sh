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
#   hard-links     -H: a tree with a file of 3 names and one of 2 arrives
#                  with the same link structure (stat %h, %i), each file's
#                  bytes sent once; a second run (--sync) keeps it so
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace metadata
MiB=$((1 << 20))

PAIR_CODE=meta$CODE_SUFFIX
# run [send args...]: one whole run (lib.sh pair_run); EXPECT=N (default 0)
# is the exit status both must end with; KILL_AT=BYTES kills the sender once
# that many are acked (at 80 Mbit/s).
run() { KILL_RATE=80Mbit/s pair_run "$@"; }

# json EXPR...: each must hold, with `s` the sender's report and `r` the receiver's transfer.
json() { report_check "$@"; }

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
      "$(python3 -c "import json; j = json.load(open('$W/send.json')); print(j['sent_bytes'], 'bytes sent,', j['hole_bytes'], 'in holes')")"
    json "s['bytes'] == $GiB" "s['sent_bytes'] == 3 * $MiB" "sum(l['bytes'] for l in s['lanes']) == 3 * $MiB" \
      "r['sent_bytes'] == 3 * $MiB" "s['hole_bytes'] == $GiB - 3 * $MiB" "r['hole_bytes'] == $GiB - 3 * $MiB"
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

  hard-links)
    mkdir -p "$W/src/t/sub"
    random_file "$W/src/t/a" $MiB a
    ln "$W/src/t/a" "$W/src/t/sub/b"
    ln "$W/src/t/a" "$W/src/t/c"
    random_file "$W/src/t/x" 65536 x
    ln "$W/src/t/x" "$W/src/t/sub/y"
    random_file "$W/src/t/z" 1000 z
    # links: name → "nlink group" (names of one file share the group's first name).
    links() {
      (cd "$1" && for f in a sub/b c x sub/y z; do
        echo "$f $(stat -c %h "$f") $(stat -c %i "$(dirname "$f")/$(basename "$f")")"; done) |
        awk '{ if (!($3 in first)) first[$3] = $1; print $1, $2, first[$3] }'
    }
    for pass in first second; do
      if [ $pass = first ]; then run -H "$W/src/t"; else run -H --sync "$W/src/t"; fi
      links "$W/src/t" > "$W/src.links"
      links "$W/dst/t" > "$W/dst.links"
      diff "$W/src.links" "$W/dst.links" > "$W/diff.txt" || fail "$pass run: link structure differs: $(cat "$W/diff.txt")"
      for f in a sub/b c x sub/y z; do cmp "$W/src/t/$f" "$W/dst/t/$f" || fail "$f differs"; done
    done
    echo "hard links: $(tr '\n' ';' < "$W/dst.links")"
    json "s['sent_bytes'] == 0"  # the second run: every file unchanged, the links made again
    run -H "$W/src/t"             # and a plain run over them: the files replaced, the links still links
    links "$W/dst/t" > "$W/dst.links"
    diff "$W/src.links" "$W/dst.links" > /dev/null || fail "third run: link structure differs"
    json "s['sent_bytes'] == $MiB + 65536 + 1000" "s['bytes'] == $MiB + 65536 + 1000"
    [ -z "$(find "$W/dst/" -name '.braid-*')" ] || fail "temporary files left"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
