#!/usr/bin/env bash
# Odd and hostile sources through the real `braid send` over loopback. One
# case per run: sources.sh BRAID_BINARY CASE.
#   special     a tree with a FIFO, a socket and (where mknod works) a device:
#               each skipped with a warning and listed in the sender's --json
#               with its reason, the rest arrives verified, exit 11 (partial)
#   strict      the same tree with --strict-sources: exit 1 naming the entry,
#               nothing is offered, nothing lands in the target
#   unreadable  a file the sender cannot open (root: its DAC capabilities
#               dropped with setpriv): skipped and listed, exit 11
#   follow      links to a file and to a directory, and a loop: without
#               --follow-symlinks they arrive as links (recv --links keep);
#               with it the file and the directory arrive as their content
#               and the loop is skipped (exit 11); a PATH that is a link to
#               a file arrives as the file (exit 0); nothing is left behind
#   grows       a file appended to while it is sent: the sender says it
#               changed, exits 1, and nothing stands under its final name
#   shrinks     the same for a file cut short while it is sent
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace sources

start_recv() {
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 --code src-test$CODE_SUFFIX --yes --once \
    --json "$W/recv.json" --log "$W/recv.log" "$@" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

# send [wrapper...] -- [send args...]: sets SEND_RC.
send() {
  local wrap=()
  while [ "$1" != -- ]; do wrap+=("$1"); shift; done
  shift
  # The code through the environment: stderr then holds only what the run says about the sources.
  BRAID_CODE=src-test$CODE_SUFFIX XDG_CONFIG_HOME=$W/scfg "${wrap[@]}" "$BRAID" send --json "$W/send.json" --log "$W/send.log" "$@" \
    "127.0.0.1:$PORT" > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
}

check() { python3 - "$W/send.json" "$@" <<'PY' || fail "report check failed: $(cat "$W/send.json")"
import json, sys
s = json.load(open(sys.argv[1]))
skipped = {e['path'].rsplit('/', 1)[-1]: e['reason'] for e in s.get('skipped', [])}
for expr in sys.argv[2:]:
    if not eval(expr):
        print('not true:', expr, '| skipped:', skipped, file=sys.stderr)
        sys.exit(1)
PY
}

no_debris() { [ -z "$(find "$W/dst" -name '.braid-*')" ] || fail "temporary files left: $(find "$W/dst" -name '.braid-*')"; }

special_tree() {
  T=$W/src/t
  mkdir -p "$T/sub"
  random_file "$T/a.bin" 300000 a
  random_file "$T/sub/b.bin" 5000 b
  mkfifo "$T/fifo"
  python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$T/sub/sock"
  DEVICE=0
  if mknod "$T/null" c 1 3 2>/dev/null; then DEVICE=1; else echo "note: mknod failed (needs root): no device in the tree"; fi
}

case "$CASE" in
  special)
    special_tree
    start_recv
    send timeout 60 -- "$T"
    [ "$SEND_RC" -eq 11 ] || fail "the sender exited $SEND_RC, not 11 (partial)"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    grep -q "skipped '.*/fifo': a FIFO" "$W/send.err" || fail "no warning for the FIFO"
    grep -q "skipped '.*/sock': a socket" "$W/send.err" || fail "no warning for the socket"
    check "skipped.get('fifo') == 'a FIFO (named pipe)'" "skipped.get('sock') == 'a socket'" \
      "s['exit_code'] == 11" "s['verified']" "s['files'] == 2"
    [ "$DEVICE" = 0 ] || check "skipped.get('null') == 'a character device'"
    cmp "$T/a.bin" "$W/dst/t/a.bin" && cmp "$T/sub/b.bin" "$W/dst/t/sub/b.bin" || fail "the regular files differ"
    [ ! -e "$W/dst/t/fifo" ] && [ ! -e "$W/dst/t/sub/sock" ] && [ ! -e "$W/dst/t/null" ] || fail "a special file was created"
    no_debris
    ;;

  strict)
    special_tree
    start_recv
    send timeout 60 -- --strict-sources "$T"
    [ "$SEND_RC" -eq 1 ] || fail "the sender exited $SEND_RC, not 1"
    grep -q -- "--strict-sources" "$W/send.err" || fail "the error does not name the flag: $(cat "$W/send.err")"
    [ "$(wc -l < "$W/send.err")" -eq 1 ] || fail "more than one line for one bad input: $(cat "$W/send.err")"
    kill "$RECV_PID"; wait "$RECV_PID" 2>/dev/null; RECV_PID=
    [ -z "$(ls -A "$W/dst")" ] || fail "something landed in the target: $(ls -A "$W/dst")"
    ;;

  unreadable)
    T=$W/src/t
    mkdir -p "$T"
    random_file "$T/ok.bin" 100000 ok
    random_file "$T/secret.bin" 100000 secret
    chmod 000 "$T/secret.bin"
    WRAP=()
    if [ "$(id -u)" = 0 ]; then
      command -v setpriv > /dev/null || { echo "SKIP [$CASE]: root reads every file and setpriv is missing"; exit 0; }
      WRAP=(setpriv --bounding-set -dac_override,-dac_read_search)
    fi
    start_recv
    send "${WRAP[@]}" -- "$T"
    [ "$SEND_RC" -eq 11 ] || fail "the sender exited $SEND_RC, not 11"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    check "skipped.get('secret.bin', '').startswith('cannot open: Permission denied')" "s['files'] == 1"
    cmp "$T/ok.bin" "$W/dst/t/ok.bin" || fail "ok.bin differs"
    [ ! -e "$W/dst/t/secret.bin" ] || fail "the unreadable file was created"
    no_debris
    ;;

  follow)
    T=$W/src/t
    mkdir -p "$T/dir" "$W/src/elsewhere/deep"
    random_file "$T/dir/f.bin" 200000 f
    random_file "$W/src/elsewhere/deep/e.bin" 150000 e
    ln -s dir/f.bin "$T/to-file"
    ln -s ../elsewhere "$T/to-dir"
    ln -s .. "$T/dir/loop"
    # Without --follow-symlinks: links, as they are (the receiver keeps them all).
    start_recv --links keep
    send -- "$T"
    [ "$SEND_RC" -eq 0 ] || fail "plain send exited $SEND_RC: $(cat "$W/send.err")"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    [ "$(readlink "$W/dst/t/to-file")" = dir/f.bin ] && [ "$(readlink "$W/dst/t/to-dir")" = ../elsewhere ] &&
      [ "$(readlink "$W/dst/t/dir/loop")" = .. ] || fail "the links did not arrive as links"
    rm -rf "$W/dst"; mkdir "$W/dst"
    # With it: content, the loop refused.
    start_recv
    send -- --follow-symlinks "$T"
    [ "$SEND_RC" -eq 11 ] || fail "send --follow-symlinks exited $SEND_RC, not 11: $(cat "$W/send.err")"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    grep -q "skipped '.*/dir/loop': a symlink loop" "$W/send.err" || fail "the loop was not reported: $(cat "$W/send.err")"
    check "skipped.get('loop', '').startswith('a symlink loop')" "s['files'] == 3"
    [ -f "$W/dst/t/to-file" ] && [ ! -L "$W/dst/t/to-file" ] && cmp "$T/dir/f.bin" "$W/dst/t/to-file" ||
      fail "the link to a file did not arrive as the file"
    [ -d "$W/dst/t/to-dir" ] && [ ! -L "$W/dst/t/to-dir" ] && cmp "$W/src/elsewhere/deep/e.bin" "$W/dst/t/to-dir/deep/e.bin" ||
      fail "the link to a directory did not arrive as the directory"
    [ ! -e "$W/dst/t/dir/loop" ] || fail "the loop was sent"
    no_debris
    # A PATH that is a link to a file (the case that failed with 'Too many levels of symbolic links').
    start_recv
    send -- --follow-symlinks "$T/to-file"
    [ "$SEND_RC" -eq 0 ] || fail "sending a link to a file exited $SEND_RC: $(cat "$W/send.err")"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    cmp "$T/dir/f.bin" "$W/dst/to-file" || fail "the linked file differs"
    no_debris
    ;;

  grows|shrinks)
    # 64 MiB at 100 Mbit/s: ~5 s to send; the file changes after ~1 s.
    random_file "$W/src/data.bin" $((64 << 20)) changing
    start_recv
    ( sleep 1
      if [ "$CASE" = grows ]; then head -c 4096 /dev/zero >> "$W/src/data.bin"
      else truncate -s $((8 << 20)) "$W/src/data.bin"; fi ) &
    send -- --rate-limit 100Mbit/s "$W/src/data.bin"
    wait
    [ "$SEND_RC" -eq 1 ] || fail "send exited $SEND_RC, not 1"
    grep -qE "changed while it was sent|shrank while it was being sent" "$W/send.err" ||
      fail "the sender did not say the file changed"
    wait_recv
    [ ! -e "$W/dst/data.bin" ] || fail "a file stands under its final name"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
