#!/usr/bin/env bash
# `make run`: a real braid transfer on this machine. Starts `braid recv` on
# loopback (127.0.0.1 and ::1 when IPv6 is up), sends a generated tree
# (~256 MiB file plus small files with odd names) over TCP and UDP lanes with
# `braid send`, prints the sender's per-lane report and checks with sha256sum
# that every file arrived identical. Exits non-zero on any failure.
set -euo pipefail
BUILD=${1:-build}
BRAID=$(cd "$BUILD" && pwd)/braid
[ -x "$BRAID" ] || { echo "demo: $BRAID not built" >&2; exit 1; }

BASE=/tmp; [ -d /dev/shm ] && [ -w /dev/shm ] && BASE=/dev/shm
WORK=$(mktemp -d "$BASE/braid-demo.XXXXXX")
RECV_PID=
cleanup() {
  [ -n "$RECV_PID" ] && kill "$RECV_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

SRC=$WORK/src; DST=$WORK/dst
mkdir -p "$SRC/tree/nested/deeper" "$SRC/tree/empty dir" "$DST" "$WORK/recv-config" "$WORK/send-config"
echo "demo: generating the files to send in $WORK"
head -c $((256 << 20)) /dev/urandom > "$SRC/big.bin"
for i in $(seq 1 40); do head -c $((i * 1000)) /dev/urandom > "$SRC/tree/file $i.dat"; done
printf 'héllo wörld\n' > "$SRC/tree/nested/ünïcødé name.txt"
: > "$SRC/tree/nested/deeper/empty file"
chmod 600 "$SRC/tree/file 1.dat"

LISTEN=(--listen 127.0.0.1:0)
if python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null; then
  LISTEN+=(--listen '[::1]:0')
fi
# The receiver makes its one-time code (a number and four words); the sender
# gets it through BRAID_CODE, as a script should (--code shows in ps).
XDG_CONFIG_HOME=$WORK/recv-config "$BRAID" recv --dir "$DST" "${LISTEN[@]}" --yes --once \
  --json "$WORK/recv.json" > "$WORK/recv.out" 2> "$WORK/recv.err" &
RECV_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/recv.out" 2>/dev/null && break; sleep 0.05; done
grep listening "$WORK/recv.out" || { cat "$WORK/recv.err" >&2; exit 1; }
PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$WORK/recv.out" | head -1 | cut -d: -f2)
CODE=$(sed -n 's/^braid: code \([^ ]*\) listening.*/\1/p' "$WORK/recv.out" | head -1)

# Lanes by hand: two TCP lanes on 127.0.0.1, one on ::1 when IPv6 is up, and
# one UDP lane (lane 0 then only carries control: docs/engine.md, "UDP lanes").
PORT6=$(grep -o '\[::1\]:[0-9]*' "$WORK/recv.out" | head -1 | sed 's/.*://' || true)
LANES=(--lane "tcp:127.0.0.1=127.0.0.1:$PORT" --lane "tcp:127.0.0.1=127.0.0.1:$PORT")
[ -n "$PORT6" ] && LANES+=(--lane "tcp:[::1]=[::1]:$PORT6")
LANES+=(--lane "udp:127.0.0.1=127.0.0.1:$PORT")
echo "demo: braid send ${LANES[*]} big.bin tree 127.0.0.1:$PORT"
BRAID_CODE=$CODE XDG_CONFIG_HOME=$WORK/send-config "$BRAID" send "${LANES[@]}" --json "$WORK/send.json" \
  --log "$WORK/send.log" "$SRC/big.bin" "$SRC/tree" "127.0.0.1:$PORT"
wait "$RECV_PID"; RECV_PID=

echo "demo: comparing every file with sha256sum"
(cd "$SRC" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$WORK/src.sha"
(cd "$DST" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$WORK/dst.sha"
if ! diff -q "$WORK/src.sha" "$WORK/dst.sha" >/dev/null; then
  echo "demo: FAILED: files differ" >&2
  diff "$WORK/src.sha" "$WORK/dst.sha" >&2 || true
  exit 1
fi
echo "demo: $(wc -l < "$WORK/src.sha") files identical; every lane opened and closed is in the log:"
grep -c '"lane_open"' "$WORK/send.log" | sed 's/^/demo:   lanes opened: /'
