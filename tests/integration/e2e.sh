#!/usr/bin/env bash
# End-to-end tests of the real `braid` binary over loopback. One case per
# run: e2e.sh BRAID_BINARY CASE. Each case starts `braid recv` on a random
# free port (127.0.0.1, and ::1 when IPv6 works), runs `braid send`, and
# checks files (SHA-256 of every file, modes, mtimes), exit codes and logs.
# Everything lives in a scratch directory (tmpfs when there is one) with
# its own XDG_CONFIG_HOME per side, removed at the end.
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace e2e

ipv6_ok() { python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null; }

# start_recv [extra recv args...]: starts the receiver, sets PORT.
start_recv() {
  rm -f "$W/recv.out"  # a second receiver must not be mistaken for the first
  local listen=(--listen 127.0.0.1:0)
  ipv6_ok && listen+=(--listen '[::1]:0')
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" "${listen[@]}" --once --json "$W/recv.json" \
    --log "$W/recv.log" "$@" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
}

# send [args...]: runs the sender, sets SEND_RC.
send() {
  XDG_CONFIG_HOME=$W/scfg "$BRAID" send --json "$W/send.json" --log "$W/send.log" "$@" > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
}

# Fingerprint of a tree: path, type, mode, mtime (s), size, sha256 (files) or target (links).
fingerprint() {
  (cd "$1" && python3 - <<'PY'
import hashlib, os, stat, sys
out = []
for root, dirs, files in os.walk(b'.'):
    for name in dirs + files:
        p = os.path.join(root, name)
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            what = b'link ' + os.readlink(p)
        elif stat.S_ISDIR(st.st_mode):
            what = b'dir'
        else:
            h = hashlib.sha256()
            with open(p, 'rb') as f:
                for block in iter(lambda: f.read(1 << 20), b''):
                    h.update(block)
            what = b'file %d ' % st.st_size + h.hexdigest().encode()
        mode = b'' if stat.S_ISLNK(st.st_mode) else b'%o' % stat.S_IMODE(st.st_mode)
        out.append(p + b' | ' + mode + b' | %d | ' % int(st.st_mtime) + what)
sys.stdout.buffer.write(b'\n'.join(sorted(out)) + b'\n')
PY
  )
}

same_trees() {
  fingerprint "$W/src" > "$W/src.fp"
  fingerprint "$W/dst" > "$W/dst.fp"
  diff "$W/src.fp" "$W/dst.fp" > "$W/diff.txt" || fail "trees differ: $(cat "$W/diff.txt")"
  ! ls -a "$W/dst" | grep_q '\.braid-' || fail "temporary files left in the target"
}

json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }


small_tree() {
  mkdir -p "$W/src/t/sub"
  random_file "$W/src/t/big.bin" $((40 << 20)) s1
  for i in $(seq 1 20); do random_file "$W/src/t/sub/f$i" $((i * 7000)) "s$i"; done
}

case "$CASE" in
  tree)  # >= 1000 odd names, empty files and dirs, a >= 1 GiB file, metadata
    T=$W/src/tree
    mkdir -p "$T/nested/a/b/c" "$T/empty dir" "$T/nested/empty inner"
    python3 - "$T" <<'PY'
import os, sys, random
t = sys.argv[1].encode()
rng = random.Random(42)
names = [b'space name %d', b'new\nline %d', b'bad \xff\xfe bytes %d', 'ünïcødé ✓ %d'.encode(), b'tab\tand\\back %d',
         b'-dash %d', b'.hidden %d', b'quote"\' %d']
for i in range(1040):
    d = [t, t + b'/nested', t + b'/nested/a/b/c'][i % 3]
    p = os.path.join(d, names[i % len(names)] % i)
    size = 0 if i % 10 == 0 else rng.randrange(1, 20000)
    with open(p, 'wb') as f:
        f.write(rng.randbytes(size))
    os.chmod(p, [0o644, 0o600, 0o755, 0o640][i % 4])
    os.utime(p, (1600000000 + i, 1600000000 + i * 7))
os.symlink(b'space name 0', os.path.join(t, b'a link'))
os.utime(os.path.join(t, b'empty dir'), (1500000000, 1500000000))
os.chmod(os.path.join(t, b'nested/empty inner'), 0o700)
PY
    random_file "$W/src/one-gib.bin" $((1 << 30)) big-seed
    touch -d '2020-01-02 03:04:05' "$W/src/one-gib.bin"
    chmod 640 "$W/src/one-gib.bin"
    start_recv --code tree-code$CODE_SUFFIX --yes
    send --code tree-code$CODE_SUFFIX --streams 2 "$W/src/tree" "$W/src/one-gib.bin" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    touch -d @1500000000 "$W/src/tree/empty dir"  # walking the tree read it; keep both sides equal
    same_trees
    [ "$(json "$W/send.json" "d['all_verified']")" = True ] || fail "report says not verified"
    [ "$(json "$W/send.json" "d['files']")" -ge 1000 ] || fail "fewer than 1000 files reported"
    ;;

  corrupt)  # one flipped bit in one frame on a lane: detected, lane closed with a reason, transfer completes
    small_tree
    start_recv --code c$CODE_SUFFIX --yes
    # Lane 1 through the proxy, which flips a bit in its second data frame.
    start_proxy --corrupt-frame 1
    send --code c$CODE_SUFFIX --rate-limit 400Mbit/s --lane "tcp:127.0.0.1=127.0.0.1:$PROXY" \
      --lane "tcp:127.0.0.1=127.0.0.1:$PORT" "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    same_trees
    grep '"lane_closed"' "$W/recv.log" | grep_q 'forged' || fail "receiver did not log the forged frame"
    grep '"lane_closed"' "$W/send.log" | grep_q 'forged' || fail "sender was not told why the lane closed"
    ;;

  kill-lane)  # lane 0 (the bootstrap, which carried the offer) dies mid-transfer: the transfer
              # completes over the other lanes, the peer logs the closing with its reason
    small_tree
    start_recv --code k$CODE_SUFFIX --yes
    # Lane 0 through the proxy, reset once 300 kB crossed it (TLS and its
    # first frames). The rate limit (an even share per lane) makes every
    # lane carry megabytes, so lane 0 surely gets that far.
    start_proxy --kill-after 300000
    send --code k$CODE_SUFFIX --streams 3 --rate-limit 400Mbit/s "$W/src/t" "127.0.0.1:$PROXY"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    same_trees
    grep '"lane_closed"' "$W/recv.log" | grep_q '"lane":0' || fail "receiver did not log lane 0 closing"
    grep '"lane_closed"' "$W/recv.log" | grep_q '"reason":"..*"' || fail "no reason logged"
    [ "$(json "$W/send.json" "[l['open_at_end'] for l in d['lanes'] if l['lane_id']==0][0]")" = False ] \
      || fail "report does not show lane 0 closed"
    ;;

  stale)  # replayed frames, frames of another session and of another lane: rejected, session unharmed
    small_tree
    # A first session, through the proxy, leaves one of its frames behind.
    start_recv --code st$CODE_SUFFIX --yes
    start_proxy --capture "$W/old-frame"
    send --code st$CODE_SUFFIX --lane "tcp:127.0.0.1=127.0.0.1:$PROXY" "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "the first send exited $SEND_RC"
    wait_recv; stop_proxies
    [ -s "$W/old-frame" ] || fail "the proxy captured no frame"
    rm -rf "$W/dst"; mkdir -p "$W/dst"
    # The second: lanes 1 and 2 through the proxy, which replays each lane's
    # first frame, sends each the other lane's, and the old session's frame.
    start_recv --code st$CODE_SUFFIX --yes
    start_proxy --stale --inject "$W/old-frame"
    send --code st$CODE_SUFFIX --rate-limit 400Mbit/s --lane "tcp:127.0.0.1=127.0.0.1:$PROXY" \
      --lane "tcp:127.0.0.1=127.0.0.1:$PROXY" "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    same_trees
    for why in replayed foreign_session foreign_lane; do
      grep '"frame_rejected"' "$W/recv.log" | grep_q "$why" || fail "no $why frame rejected"
    done
    [ "$(json "$W/recv.json" "d['rejected_frames']")" -ge 3 ] || fail "rejected frames not counted"
    ! grep -q '"lane_closed"' "$W/recv.log" || fail "a stale frame closed a lane"
    ;;

  report)  # the per-lane report's fields, over 127.0.0.1 and ::1
    small_tree
    start_recv --code r$CODE_SUFFIX --yes
    send --code r$CODE_SUFFIX --streams 2 "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv
    python3 - "$W/send.json" "$W/recv.json" <<'PY' || fail "report fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['all_verified'] and d['verified'], d
# Each end's CPU (getrusage) and its cost per GiB of what the lanes delivered.
for doc in (d, json.load(open(sys.argv[2]))):
    c = doc['cpu']
    spent = c['user_seconds'] + c['sys_seconds']
    assert c['user_seconds'] >= 0 and c['sys_seconds'] >= 0 and spent > 0, c
    assert c['bytes'] == d['bytes'], (c, d['bytes'])
    assert abs(c['seconds_per_gib'] - spent / (c['bytes'] / 2**30)) < 1e-6, c
assert d['bytes'] == 40 * 2**20 + sum(i * 7000 for i in range(1, 21)), d['bytes']
lanes = d['lanes']
assert len(lanes) >= 2, lanes
for l in lanes:
    for k in ('name', 'local', 'remote', 'bytes', 'chunks', 'share', 'rate_bytes_per_sec', 'rtt_ms', 'stalls',
              'duplicates', 'abandoned'):
        assert k in l, k
assert sum(l['bytes'] for l in lanes) == d['bytes']
assert abs(sum(l['share'] for l in lanes) - 1) < 1e-9
# Command to first acked byte: after the connect began, within the whole run.
t = d['transfers'][0] if 'transfers' in d else d
assert 0 < t['first_byte_seconds'] < 30, t['first_byte_seconds']
PY
    grep -q '"progress"' "$W/send.log" || fail "no progress lines in the log"
    [ "$(grep -c '"progress"' "$W/send.log")" -ge 10 ] || fail "fewer than 10 progress lines"
    ! grep -q $'\r' "$W/send.err" || fail "progress drawn although stderr is not a terminal"
    ;;

  lanes-by-hand)  # --lane LOCAL=REMOTE:PORT, repeated, with the PATHs after it
    small_tree
    start_recv --code lh$CODE_SUFFIX --yes
    send --code lh$CODE_SUFFIX --lane "127.0.0.1=127.0.0.1:$PORT" --lane "127.0.0.1=127.0.0.1:$PORT" "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv
    same_trees
    [ "$(json "$W/send.json" "len(d['lanes'])")" -eq 3 ] || fail "expected lane 0 plus the two named lanes"
    ;;

  tcp-cc)  # --cc picks the kernel controller of TCP lanes: delay (default) → bbr, or a kernel name
    small_tree
    start_recv --code cc$CODE_SUFFIX --yes
    send --code cc$CODE_SUFFIX --cc cubic --lane "127.0.0.1=127.0.0.1:$PORT" "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv
    same_trees
    # Every TCP lane that opened (lane 1 may join after a loaded host's
    # small transfer is over, and then opens no more) ran cubic.
    lanes_open=$(grep -c '"lane_open"' "$W/send.log")
    [ "$lanes_open" -ge 1 ] && [ "$(grep '"lane_open"' "$W/send.log" | grep -c '"cc":"cubic"')" -eq "$lanes_open" ] ||
      fail "TCP lanes did not run cubic"
    rm -rf "$W/dst"/*
    start_recv --code cc2$CODE_SUFFIX --yes
    send --code cc2$CODE_SUFFIX --lane "127.0.0.1=127.0.0.1:$PORT" "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv
    lanes_open=$(grep -c '"lane_open"' "$W/send.log")
    [ "$lanes_open" -ge 1 ] && [ "$(grep '"lane_open"' "$W/send.log" | grep -c '"cc":"bbr"')" -eq "$lanes_open" ] ||
      fail "default TCP lanes did not run bbr"
    send --code cc3$CODE_SUFFIX --cc nope "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -ne 0 ] && grep -q "unknown --cc 'nope'" "$W/send.err" || fail "no clear error for --cc nope"
    ;;

  late-lane)  # lane 1's path holds it 0.5 s (a proxy): it joins the running transfer and carries bytes
    random_file "$W/src/late.bin" $((128 << 20)) late
    start_recv --code ll$CODE_SUFFIX --yes
    start_proxy --delay-ms 500
    # The rate limit keeps lane 0 alone busy for longer than the delay.
    send --code ll$CODE_SUFFIX --rate-limit 800Mbit/s --lane "127.0.0.1=127.0.0.1:$PROXY" \
      "$W/src/late.bin" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
    same_trees
    python3 - "$W/send.json" "$W/send.log" <<'PY' || fail "lane 1 did not join the running transfer"
import json, sys
d = json.load(open(sys.argv[1]))
events = [json.loads(l) for l in open(sys.argv[2])]
sending = next(e['t'] for e in events if e['event'] == 'status' and e.get('status') == 'sending')
opened = next(e for e in events if e['event'] == 'lane_open' and e['lane'] == 1)
lane1 = next(l for l in d['lanes'] if l['lane_id'] == 1)
print('lane 1 opened %.3f s after the transfer began, joined transfer %s, carried %d of %d bytes'
      % (opened['t'] - sending, opened.get('joined_transfer'), lane1['bytes'], d['bytes']))
assert opened['t'] > sending and opened.get('joined_transfer') == d['transfer_id'], opened
assert lane1['bytes'] > 0, lane1
PY
    ;;

  wrong-code)
    small_tree
    start_recv --code right-code$CODE_SUFFIX --yes
    send --code wrong-code$CODE_SUFFIX "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 4 ] || fail "send exited $SEND_RC, expected 4"
    grep -qi 'pairing failed' "$W/send.err" || fail "no clear message"
    [ -z "$(ls -A "$W/dst")" ] || fail "something was written"
    ;;

  refused)  # no --yes and no terminal to ask: the offer is refused
    small_tree
    start_recv --code r2$CODE_SUFFIX
    send --code r2$CODE_SUFFIX "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 6 ] || fail "send exited $SEND_RC, expected 6"
    grep -q 'refused' "$W/send.err" || fail "no clear message"
    [ -z "$(ls -A "$W/dst")" ] || fail "something was written"
    ;;

  unreachable)
    small_tree
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    send --code x$CODE_SUFFIX "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 3 ] || fail "send exited $SEND_RC, expected 3"
    grep -q 'unreachable' "$W/send.err" || fail "no clear message"
    ;;

  disk-full)  # no room: refused before any byte by the space check (exit 8 both ends). The disk
              # filling up mid-transfer, and the resume after it, are in process (session_test.cpp:
              # ADiskThatFillsUpMidTransferKeepsWhatArrivedForAResume, through DiskFaults).
    small_tree
    mkdir -p "$W/small"
    mount -t tmpfs -o size=16m tmpfs "$W/small" 2>/dev/null || { echo "SKIP [$CASE]: cannot mount a small tmpfs"; exit 0; }
    trap 'umount "$W/small" 2>/dev/null; cleanup' EXIT
    rmdir "$W/dst"; ln -s "$W/small" "$W/dst"
    start_recv --code df$CODE_SUFFIX --yes
    send --code df$CODE_SUFFIX "$W/src/t" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 8 ] || fail "send exited $SEND_RC, expected 8 (space check)"
    grep -q 'space' "$W/send.err" || fail "no clear message"
    wait_recv; [ "$RECV_RC" -eq 8 ] || fail "recv exited $RECV_RC, expected 8"
    [ -z "$(find "$W/small" -mindepth 1 -print -quit)" ] || fail "something was left in the target: $(ls -A "$W/small")"
    ;;

  not-writable)
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir /proc/braid-cannot-be-here --listen 127.0.0.1:0 --once \
      > "$W/recv.out" 2> "$W/recv.err" < /dev/null
    rc=$?
    [ "$rc" -eq 7 ] || fail "recv exited $rc, expected 7"
    grep -q 'target directory\|cannot' "$W/recv.err" || fail "no clear message"
    ;;

  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
