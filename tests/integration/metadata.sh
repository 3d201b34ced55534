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
#   sparse-parts   -S on a tree whose offer goes in parts and is answered
#                  part by part (protocol 9): sparse files in its first and
#                  its last part arrive with their holes, and only their
#                  data crosses
#   hard-links     -H: a tree with a file of 3 names and one of 2 arrives
#                  with the same link structure (stat %h, %i), each file's
#                  bytes sent once; a second run (--sync) keeps it so
#   owners         -a (= -o -g) as root: files, a directory and a symlink
#                  owned by other users and groups (by name, and ids no name
#                  stands for) arrive with them (stat %u %g); without -a they
#                  belong to the receiver; a --sync run over an unchanged
#                  file gives it its new owner (rsync's quick check)
#   xattrs-acls    -X -A: user.* (binary values too) and trusted.* xattrs,
#                  an access ACL on a file, access and default ACLs on a
#                  directory arrive (getfattr -d -m -, getfacl); an xattr
#                  removed at the source goes at the target on a --sync run;
#                  -X alone sends no ACL
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

  sparse-parts)
    holes_supported
    mkdir -p "$W/src/t/many"
    # Enough entries for an offer of several parts (1 MiB of entries a frame).
    python3 - "$W/src/t/many" <<'PY'
import os, sys
for d in range(40):
    os.makedirs(os.path.join(sys.argv[1], f"d{d:02d}"))
    for i in range(1000):
        with open(os.path.join(sys.argv[1], f"d{d:02d}", f"file-with-a-longer-name-{i:04d}"), "wb") as f: f.write(b"x")
PY
    # Holes that share chunks with data, in the first entries and in the last.
    sparse_file "$W/src/t/a-disk.img" $((64 * MiB)) 0 $((20 * MiB))
    truncate -s $((64 * MiB + 4096)) "$W/src/t/a-disk.img"  # a hole that ends the file off the chunk grid
    sparse_file "$W/src/t/zz-disk.img" $((96 * MiB)) $((50 * MiB)) $((95 * MiB))
    run -S "$W/src/t"
    grep -q '"event":"offer_part_accepted"' "$W/recv.log" || fail "the offer was not answered part by part"
    same_sparse "$W/src/t/a-disk.img" "$W/dst/t/a-disk.img"
    same_sparse "$W/src/t/zz-disk.img" "$W/dst/t/zz-disk.img"
    diff -r "$W/src/t/many" "$W/dst/t/many" > /dev/null || fail "the small files differ"
    HOLES=$((64 * MiB + 4096 - 2 * MiB + 96 * MiB - 2 * MiB))
    echo "sparse-parts: $(python3 -c "import json; j = json.load(open('$W/send.json')); print(j['sent_bytes'], 'bytes sent,', j['hole_bytes'], 'in holes')")"
    json "s['hole_bytes'] == $HOLES" "r['hole_bytes'] == $HOLES" "s['sent_bytes'] == 4 * $MiB + 40000" \
      "r['sent_bytes'] == s['sent_bytes']" "sum(l['bytes'] for l in s['lanes']) == s['sent_bytes']"
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

  owners)
    [ "$(id -u)" -eq 0 ] || { echo "SKIP [$CASE]: giving files away needs root"; exit 77; }
    mkdir -p "$W/src/t/sub"
    echo a > "$W/src/t/a"; echo b > "$W/src/t/sub/b"; echo c > "$W/src/t/c"
    ln -s a "$W/src/t/link"
    chown nobody:nogroup "$W/src/t/a"
    chown 4242:4343 "$W/src/t/sub/b"   # ids no name stands for: they cross as ids
    chown daemon:daemon "$W/src/t/sub"
    chown -h 4444:4545 "$W/src/t/link"
    chmod 4755 "$W/src/t/c"; chown bin:bin "$W/src/t/c"; chmod 4755 "$W/src/t/c"  # set-uid survives the chown
    owners() { (cd "$1" && for f in a sub/b sub c link .; do echo "$f $(stat -c '%u %g %a' "$f")"; done); }
    run -a "$W/src/t"
    owners "$W/src/t" > "$W/src.own"; owners "$W/dst/t" > "$W/dst.own"
    diff "$W/src.own" "$W/dst.own" > "$W/diff.txt" || fail "owners differ: $(cat "$W/diff.txt")"
    echo "owners: $(tr '\n' ';' < "$W/dst.own")"
    rm -rf "$W/dst/t"
    run "$W/src/t"   # without -o -g: the receiver's
    [ "$(stat -c '%u %g' "$W/dst/t/a")" = "0 0" ] || fail "without -a the file is $(stat -c '%u %g' "$W/dst/t/a")"
    run --sync -o -g "$W/src/t"
    json "s['sent_bytes'] == 0"
    [ "$(stat -c '%U %G' "$W/dst/t/a")" = "nobody nogroup" ] || fail "an unchanged file kept its old owner on --sync -o -g"
    run --numeric-ids -a "$W/src/t"
    owners "$W/dst/t" > "$W/dst.own"
    diff "$W/src.own" "$W/dst.own" > /dev/null || fail "--numeric-ids: owners differ"
    ;;

  xattrs-acls)
    [ "$(id -u)" -eq 0 ] || { echo "SKIP [$CASE]: trusted.* xattrs and other users' ACLs need root"; exit 77; }
    command -v getfacl > /dev/null && command -v getfattr > /dev/null ||
      { echo "SKIP [$CASE]: getfattr/getfacl missing (scripts/install-deps.sh: attr acl)"; exit 77; }
    mkdir -p "$W/src/t/dir"
    setfattr -n user.probe -v 1 "$W/src/t" 2>/dev/null || { echo "SKIP [$CASE]: the scratch file system keeps no user xattrs"; exit 77; }
    setfattr -x user.probe "$W/src/t"
    echo f > "$W/src/t/f"; echo g > "$W/src/t/dir/g"; echo plain > "$W/src/t/plain"
    setfattr -n user.comment -v "hello world" "$W/src/t/f"
    setfattr -n user.bin -v 0x00ff10 "$W/src/t/f"
    setfattr -n trusted.secret -v s "$W/src/t/f"
    setfattr -n user.d -v dirval "$W/src/t/dir"
    setfacl -m u:nobody:rx,g:nogroup:r "$W/src/t/f"
    setfacl -m u:daemon:rwx "$W/src/t/dir"
    setfacl -d -m g:nogroup:rwx "$W/src/t/dir"
    # The target's directory inherits a default ACL the source's plain file
    # does not have: -A must not leave it an inherited one.
    mkdir -p "$W/dst/t"; setfacl -d -m u:bin:rwx "$W/dst/t"
    attrs() { (cd "$1" && for f in f dir dir/g plain; do
      echo "== $f"; getfattr -d -m - -e hex "$f" 2>/dev/null | grep -v '^# file'; getfacl -p "$f" 2>/dev/null | grep -v '^# file'; done); }
    run -X -A "$W/src/t"
    attrs "$W/src/t" > "$W/src.attrs"; attrs "$W/dst/t" > "$W/dst.attrs"
    diff "$W/src.attrs" "$W/dst.attrs" > "$W/diff.txt" || fail "xattrs or ACLs differ: $(cat "$W/diff.txt")"
    grep -q 'user:nobody:r-x' "$W/dst.attrs" && grep -q 'default:group:nogroup:rwx' "$W/dst.attrs" &&
      grep -q 'trusted.secret' "$W/dst.attrs" || fail "the ACLs or trusted.* are not there: $(cat "$W/dst.attrs")"
    echo "xattrs and ACLs: $(grep -c . "$W/dst.attrs") lines of getfattr/getfacl alike"
    setfattr -x user.comment "$W/src/t/f"
    touch -r "$W/dst/t/f" "$W/src/t/f"   # size and mtime the same: the quick check keeps its bytes
    run --sync -X -A "$W/src/t"
    json "s['sent_bytes'] == 0"
    getfattr -n user.comment "$W/dst/t/f" > /dev/null 2>&1 && fail "user.comment was not removed at the target"
    rm -rf "$W/dst/t"
    run -X "$W/src/t"
    getfacl -p "$W/dst/t/f" | grep_q 'user:nobody' && fail "-X alone sent an ACL"
    getfattr -n user.bin "$W/dst/t/f" > /dev/null || fail "-X did not send user.bin"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
