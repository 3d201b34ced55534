#!/usr/bin/env bash
# Sync through the real `braid` binary over loopback: a second run sends
# only what changed (docs/engine.md, "Sync"). One case per run:
# sync.sh BRAID_BINARY CASE. Figures come from the reports, never from time.
#   unchanged    100 files sent once; the second --sync run sends no piece
#                byte and reports 100 files unchanged
#   delta        a 32 MiB file with one changed MiB: 1 MiB of pieces, identical
#   delete       --delete removes exactly what the source no longer has, under
#                the sent directory only, a symlink there removed (not followed)
#   dry-run      --dry-run --delete lists, changes nothing, sends nothing
#   interrupted  a sync killed mid-way leaves the old file as it was; the
#                same command again finishes (resuming what arrived)
#   interrupted-tree  a tree where 60 of 120 files changed, 20 are new and
#                20 gone (--delete), synced with the sender killed at three
#                points and the receiver killed near the end: after each
#                kill every file at its final name is its old version or
#                its new one, complete (sha256), never a mix or a part; the
#                same command then finishes with the trees identical
#   checksum     a receiver file damaged with size and mtime kept: --sync
#                trusts it, --checksum finds and repairs the one chunk
#   update       --update keeps a file newer on the receiver,
#                --ignore-existing every existing one
#   backup       --backup-suffix '~': the old version of a replaced file
#                and of a deleted one kept as NAME~ (sha256), unchanged
#                files get none, backups survive the next --delete; then
#                --backup-dir: the old versions under DIR/PATH, the target
#                otherwise identical to the source
#   backup-interrupted  a --backup-suffix sync of a tree killed mid-way
#                (sender) and near the end (receiver): every file is its old
#                or its new version, whole, and every backup is the old
#                version; the same command then finishes, each replaced
#                file's backup its old version
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace sync
MiB=$((1 << 20))

PAIR_CODE=sync-test$CODE_SUFFIX
# run [send args...]: one whole run (lib.sh pair_run: both must succeed);
# KILL_AT=BYTES kills the sender once that many are acked.
run() { pair_run "$@"; }

# Path, kind, mode, mtime, size and SHA-256 of every entry under $1.
tree_state() {
  (cd "$1" && find . -mindepth 1 ! -name '.braid-*' -printf '%p %y %m %T@ %s\n' | sort &&
    find . -type f ! -name '.braid-*' -print0 | sort -z | xargs -0 -r sha256sum)
}
same_trees() {
  tree_state "$1" > "$W/a.state"
  tree_state "$2" > "$W/b.state"
  diff "$W/a.state" "$W/b.state" > "$W/diff.txt" || fail "$3: $(head -5 "$W/diff.txt")"
}

# sync_json EXPR...: each must hold, with `s` the sender's report and `r` the receiver's transfer.
sync_json() { report_check "$@"; }
piece_bytes() { python3 -c "import json; print(sum(l['bytes'] for l in json.load(open('$W/send.json'))['lanes']))"; }

case "$CASE" in
  unchanged)
    mkdir -p "$W/src/t/sub"
    for i in $(seq 100); do
      d="$W/src/t"; [ $((i % 3)) -eq 0 ] && d="$W/src/t/sub"
      random_file "$d/f$i" $((1000 + i * 97)) "u$i"
    done
    run --sync "$W/src/t"
    same_trees "$W/src/t" "$W/dst/t" "the first run"
    sync_json "s['sync']['files_sent'] == 100" "s['sent_bytes'] == s['bytes']"
    run --sync "$W/src/t"
    same_trees "$W/src/t" "$W/dst/t" "the second run"
    echo "second run: $(piece_bytes) piece bytes of $(python3 -c "import json; print(json.load(open('$W/send.json'))['bytes'])")"
    sync_json "s['sync']['files_unchanged'] == 100" "s['sync']['files_sent'] == 0" "s['sent_bytes'] == 0" \
      "sum(l['bytes'] for l in s['lanes']) == 0" "s['sync']['kept_bytes'] == s['bytes']" \
      "r['sync']['files_unchanged'] == 100" "r['sent_bytes'] == 0"
    ;;

  delta)
    random_file "$W/src/big.bin" $((32 * MiB)) d1
    run --sync "$W/src/big.bin"
    random_file "$W/one" $MiB d2
    dd if="$W/one" of="$W/src/big.bin" bs=1M seek=10 conv=notrunc status=none
    run --sync "$W/src/big.bin"
    cmp "$W/src/big.bin" "$W/dst/big.bin" || fail "the updated file differs from the source"
    same_trees "$W/src" "$W/dst" "after the delta"
    echo "delta: $(piece_bytes) piece bytes for 1 MiB changed of 32 MiB"
    sync_json "s['sync']['files_updated'] == 1" "s['sent_bytes'] == $MiB" \
      "sum(l['bytes'] for l in s['lanes']) == $MiB" "s['sync']['reused_bytes'] == 31 * $MiB" \
      "s['sync']['reused_chunks'] == 31" "r['sync']['reused_bytes'] == 31 * $MiB"
    [ -z "$(find "$W/dst" -name '.braid-*')" ] || fail "temporary files left"
    ;;

  delete)
    mkdir -p "$W/src/t/sub" "$W/src/t/keep"
    for f in a b c sub/x sub/y keep/z; do random_file "$W/src/t/$f" 5000 "$f"; done
    run --sync "$W/src/t"
    rm "$W/src/t/b" "$W/src/t/sub/y"
    mkdir -p "$W/dst/t/extra/deep" "$W/outside"
    echo junk > "$W/dst/t/extra/deep/j"
    echo junk > "$W/dst/t/sub/stale"
    echo precious > "$W/outside/precious"
    ln -s "$W/outside" "$W/dst/t/escape"        # removed as a link, never followed
    echo mine > "$W/dst/beside"                  # beside the sent directory: not the transfer's
    run --delete "$W/src/t"
    same_trees "$W/src/t" "$W/dst/t" "after --delete"
    [ -f "$W/outside/precious" ] || fail "--delete followed a symlink out of the target"
    [ -f "$W/dst/beside" ] || fail "--delete removed a file outside the sent directory"
    sync_json "s['sync']['extraneous'] == 5" "r['sync']['deleted'] == 7" "s['sent_bytes'] == 0"
    ;;

  dry-run)
    mkdir -p "$W/src/t"
    for f in a b c; do random_file "$W/src/t/$f" 70000 "$f"; done
    run --sync "$W/src/t"
    random_file "$W/src/t/b" 70000 changed
    rm "$W/src/t/c"
    random_file "$W/src/t/new" 100 new
    tree_state "$W/dst" > "$W/before.state"
    run --dry-run --delete "$W/src/t"
    tree_state "$W/dst" > "$W/after.state"
    diff "$W/before.state" "$W/after.state" > /dev/null || fail "the dry run changed the target"
    [ -z "$(find "$W/dst" -name '.braid-*')" ] || fail "the dry run left temporary files"
    for line in "unchanged t/a" "update t/b" "send t/new" "delete t/c"; do
      grep -qx "$line" "$W/send.out" || fail "the dry run does not list '$line'"
    done
    sync_json "s['status'] == 'dry_run'" "s['sync']['dry_run']" "s['sync']['extraneous'] == 1" \
      "s['sync']['files_updated'] == 1" "s['sync']['files_sent'] == 1"
    ;;

  interrupted)
    random_file "$W/src/big.bin" $((64 * MiB)) i1
    run --sync "$W/src/big.bin"
    OLD=$(sha256sum < "$W/dst/big.bin")
    random_file "$W/src/big.bin" $((64 * MiB)) i2  # every chunk differs now
    KILL_AT=$((24 * MiB)) run --sync "$W/src/big.bin"
    [ "$SEND_RC" -eq 137 ] || fail "the sender was to die of SIGKILL, it exited $SEND_RC"
    [ "$(sha256sum < "$W/dst/big.bin")" = "$OLD" ] || fail "the interrupted sync changed the old file"
    run --sync "$W/src/big.bin"
    cmp "$W/src/big.bin" "$W/dst/big.bin" || fail "the rerun did not finish the sync"
    echo "rerun: $(piece_bytes) piece bytes of 64 MiB, $(python3 -c "import json; print(json.load(open('$W/send.json'))['resumed_bytes'])") resumed"
    sync_json "s['resumed_bytes'] >= 16 * $MiB" "s['sent_bytes'] <= 48 * $MiB"
    ;;

  interrupted-tree)
    mkdir -p "$W/src/t/a" "$W/src/t/b"
    for i in $(seq -w 1 120); do random_file "$W/src/t/$([ "$i" -le 60 ] && echo a || echo b)/f$i" $((512 * 1024)) "old$i"; done
    for i in $(seq -w 121 140); do random_file "$W/src/t/b/gone$i" 65536 "gone$i"; done
    run --sync "$W/src/t"
    (cd "$W/dst/t" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$W/old.sums"
    # The new version: every other file rewritten, 20 new, the 20 gone.
    for i in $(seq -w 1 2 120); do f=$(ls "$W/src/t"/*/f$i); random_file "$f" $((512 * 1024)) "new$i"; done
    for i in $(seq -w 141 160); do random_file "$W/src/t/a/new$i" $((256 * 1024)) "new$i"; done
    rm -f "$W/src/t/b"/gone*
    (cd "$W/src/t" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$W/new.sums"
    # every file at its final name: old or new, whole
    old_or_new() {
      python3 - "$W/old.sums" "$W/new.sums" "$W/dst/t" "$1" <<'PY' || fail "$1: a file is neither its old nor its new version"
import hashlib, os, sys
def sums(p):
    return {l.split(None, 1)[1].strip(): l.split()[0] for l in open(p)}
old, new, root, when = sums(sys.argv[1]), sums(sys.argv[2]), sys.argv[3], sys.argv[4]
counts = {'old': 0, 'new': 0, 'same': 0}
for d, _, files in os.walk(root):
    for f in files:
        if f.startswith('.braid-'): continue  # a temporary file: no final name yet
        rel = './' + os.path.relpath(os.path.join(d, f), root)
        h = hashlib.sha256(open(os.path.join(d, f), 'rb').read()).hexdigest()
        kinds = [k for k, m in (('old', old), ('new', new)) if m.get(rel) == h]
        if not kinds:
            print(f'{when}: {rel} is neither version', file=sys.stderr); sys.exit(1)
        counts['same' if len(kinds) == 2 else kinds[0]] += 1
print(f'{when}: {counts["old"]} old, {counts["new"]} new, {counts["same"]} unchanged')
PY
    }
    total=$((60 * 512 * 1024 + 20 * 256 * 1024))
    for at in $((total / 5)) $((total / 2)) $((total * 9 / 10)); do
      KILL_AT=$at run --sync --delete "$W/src/t"
      [ "$SEND_RC" -eq 137 ] || [ "$SEND_RC" -eq 0 ] || fail "the sender exited $SEND_RC"
      old_or_new "sender killed at $at of $total bytes"
    done
    # The receiver killed (SIGKILL) once the sender saw 95 % acked: it may be putting files in place.
    pair_start_recv_killed() {
      rm -f "$W/recv.out" "$W/send.log"
      XDG_CONFIG_HOME=$W/rcfg python3 "$(dirname "$0")/kill_when.py" "$W/send.log" $((total * 95 / 100)) -- \
        "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 --code "$PAIR_CODE" --yes --once \
        > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
      RECV_PID=$!
      for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
      PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
      [ -n "$PORT" ] || fail "receiver did not start"
      XDG_CONFIG_HOME=$W/scfg timeout 60 "$BRAID" send --code "$PAIR_CODE" --log "$W/send.log" --sync --delete \
        --rate-limit 80Mbit/s "$W/src/t" "127.0.0.1:$PORT" > "$W/send.out" 2> "$W/send.err"
      wait_recv
    }
    pair_start_recv_killed
    old_or_new "receiver killed near the end (exit $RECV_RC)"
    run --sync --delete "$W/src/t"
    same_trees "$W/src/t" "$W/dst/t" "after the interrupted syncs"
    [ -z "$(find "$W/dst/" -name '.braid-*')" ] || fail "temporary files left"
    ;;

  checksum)
    random_file "$W/src/data.bin" $((8 * MiB)) c1
    run --sync "$W/src/data.bin"
    printf 'rot' | dd of="$W/dst/data.bin" bs=1 seek=$((3 * MiB + 77)) conv=notrunc status=none
    touch -r "$W/src/data.bin" "$W/dst/data.bin"
    run --sync "$W/src/data.bin"
    cmp -s "$W/src/data.bin" "$W/dst/data.bin" && fail "the quick check was to trust the damaged file"
    sync_json "s['sync']['files_unchanged'] == 1" "s['sent_bytes'] == 0"
    run --checksum "$W/src/data.bin"
    cmp "$W/src/data.bin" "$W/dst/data.bin" || fail "--checksum did not repair the file"
    sync_json "s['sent_bytes'] == $MiB" "s['sync']['reused_chunks'] == 7"
    # And once more: every chunk matches, nothing is sent, the file stays.
    INODE=$(stat -c %i "$W/dst/data.bin")
    run --checksum "$W/src/data.bin"
    sync_json "s['sent_bytes'] == 0" "s['sync']['files_unchanged'] == 1" "s['sync']['files_updated'] == 0" \
      "r['sync']['files_unchanged'] == 1"
    [ "$(stat -c %i "$W/dst/data.bin")" = "$INODE" ] || fail "an identical file was rewritten"
    ;;

  update)
    mkdir -p "$W/src/t"
    for f in a b; do random_file "$W/src/t/$f" 3000 "$f"; done
    run --sync "$W/src/t"
    echo "edited there" > "$W/dst/t/a"
    touch -d '2099-01-01' "$W/dst/t/a"   # newer on the receiver
    random_file "$W/src/t/b" 3000 b2     # changed at the source
    run --update "$W/src/t"
    grep -q "edited there" "$W/dst/t/a" || fail "--update replaced a file newer on the receiver"
    cmp "$W/src/t/b" "$W/dst/t/b" || fail "--update did not send the changed file"
    sync_json "s['sync']['files_skipped'] == 1" "s['sync']['files_updated'] == 1"
    random_file "$W/src/t/b" 3000 b3
    run --ignore-existing "$W/src/t"
    cmp -s "$W/src/t/b" "$W/dst/t/b" && fail "--ignore-existing replaced an existing file"
    sync_json "s['sync']['files_skipped'] == 2" "s['sent_bytes'] == 0"
    ;;

  backup)
    mkdir -p "$W/src/t/sub"
    for f in a b c sub/d; do random_file "$W/src/t/$f" 70000 "$f"; done
    run --sync "$W/src/t"
    old_a=$(sha256sum < "$W/dst/t/a"); old_b=$(sha256sum < "$W/dst/t/b")
    random_file "$W/src/t/a" 90000 a2   # replaced (every chunk differs)
    rm "$W/src/t/b"                     # deleted there
    run --sync --delete --backup-suffix '~' "$W/src/t"
    cmp "$W/src/t/a" "$W/dst/t/a" || fail "the replaced file is not the new version"
    [ "$(sha256sum < "$W/dst/t/a~")" = "$old_a" ] || fail "t/a~ is not the old version of t/a"
    [ ! -e "$W/dst/t/b" ] || fail "--delete left t/b"
    [ "$(sha256sum < "$W/dst/t/b~")" = "$old_b" ] || fail "t/b~ is not the old version of the deleted t/b"
    [ ! -e "$W/dst/t/c~" ] && [ ! -e "$W/dst/t/sub/d~" ] || fail "an unchanged file got a backup"
    sync_json "s['sync']['files_updated'] == 1" "s['sync']['extraneous'] == 1" "r['sync']['deleted'] == 1"
    # The next run with --delete keeps the backups (rsync's protect rule for the suffix).
    run --sync --delete --backup-suffix '~' "$W/src/t"
    [ -f "$W/dst/t/a~" ] && [ -f "$W/dst/t/b~" ] || fail "--delete removed a backup"
    [ ! -e "$W/dst/t/a~~" ] || fail "a backup was backed up"
    sync_json "s['sync']['extraneous'] == 0" "s['sent_bytes'] == 0"
    # Under a backup directory instead: paths kept below it, the target as the source.
    rm -f "$W/dst/t/a~" "$W/dst/t/b~"
    mid_a=$(sha256sum < "$W/dst/t/a"); old_d=$(sha256sum < "$W/dst/t/sub/d")
    random_file "$W/src/t/a" 40000 a3
    rm "$W/src/t/sub/d"
    run --sync --delete --backup-dir old "$W/src/t"
    same_trees "$W/src/t" "$W/dst/t" "with --backup-dir"
    [ "$(sha256sum < "$W/dst/old/t/a")" = "$mid_a" ] || fail "old/t/a is not the old version of t/a"
    [ "$(sha256sum < "$W/dst/old/t/sub/d")" = "$old_d" ] || fail "old/t/sub/d is not the deleted t/sub/d"
    [ -z "$(find "$W/dst" -name '.braid-*')" ] || fail "temporary files left"
    ;;

  backup-interrupted)
    mkdir -p "$W/src/t"
    for i in $(seq -w 1 40); do random_file "$W/src/t/f$i" $((512 * 1024)) "old$i"; done
    run --sync "$W/src/t"
    (cd "$W/dst/t" && sha256sum f*) > "$W/old.sums"
    for i in $(seq -w 1 2 40); do random_file "$W/src/t/f$i" $((1024 * 1024)) "new$i"; done
    (cd "$W/src/t" && sha256sum f*) > "$W/new.sums"
    # Every name old or new and whole; every backup the old version of its file.
    check_names() {
      python3 - "$W/old.sums" "$W/new.sums" "$W/dst/t" "$1" <<'PY' || fail "$1: a file or a backup is wrong"
import hashlib, os, sys
sums = lambda p: {l.split()[1]: l.split()[0] for l in open(p)}
old, new, root, when = sums(sys.argv[1]), sums(sys.argv[2]), sys.argv[3], sys.argv[4]
n = {'old': 0, 'new': 0, 'backups': 0}
for f in sorted(os.listdir(root)):
    if f.startswith('.braid-'): continue
    h = hashlib.sha256(open(os.path.join(root, f), 'rb').read()).hexdigest()
    if f.endswith('~'):
        if old.get(f[:-1]) != h: sys.exit(f'{when}: {f} is not the old version of {f[:-1]}')
        n['backups'] += 1
    elif old.get(f) == h: n['old'] += 1
    elif new.get(f) == h: n['new'] += 1
    else: sys.exit(f'{when}: {f} is neither its old nor its new version')
print(f"{when}: {n['old']} old, {n['new']} new, {n['backups']} backups")
PY
    }
    total=$((20 * MiB))
    KILL_AT=$((total / 2)) run --sync --backup-suffix '~' "$W/src/t"
    [ "$SEND_RC" -eq 137 ] || [ "$SEND_RC" -eq 0 ] || fail "the sender exited $SEND_RC"
    check_names "sender killed half-way"
    # The receiver killed (SIGKILL) once the sender saw 95 % acked: it may be keeping backups or renaming.
    rm -f "$W/recv.out" "$W/send.log"
    XDG_CONFIG_HOME=$W/rcfg python3 "$(dirname "$0")/kill_when.py" "$W/send.log" $((total * 95 / 100)) -- \
      "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 --code "$PAIR_CODE" --yes --once \
      > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
    RECV_PID=$!
    for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
    PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
    [ -n "$PORT" ] || fail "receiver did not start"
    XDG_CONFIG_HOME=$W/scfg timeout 60 "$BRAID" send --code "$PAIR_CODE" --log "$W/send.log" --sync \
      --backup-suffix '~' --rate-limit 80Mbit/s "$W/src/t" "127.0.0.1:$PORT" > "$W/send.out" 2> "$W/send.err"
    wait_recv
    check_names "receiver killed near the end (exit $RECV_RC)"
    run --sync --backup-suffix '~' "$W/src/t"
    check_names "after the rerun"
    for i in $(seq -w 1 2 40); do
      cmp -s "$W/src/t/f$i" "$W/dst/t/f$i" || fail "t/f$i is not the new version after the rerun"
      [ -f "$W/dst/t/f$i~" ] || fail "t/f$i~ is missing after the rerun"
    done
    [ -z "$(find "$W/dst" -name '.braid-*')" ] || fail "temporary files left"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "ok $CASE"
