#!/usr/bin/env bash
# A port that is not a braid receiver is named as such in one line, with
# exit 3 (nothing braid there to send to), not an OpenSSL error: an HTTP
# server, an SSH server (it speaks first), one that answers bytes that are
# neither TLS nor text, and one that closes at once. Loopback only; each
# peer (not_braid_peer.py) is started and stopped here.
set -uo pipefail
braid=$1
here=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/braid-notbraid.XXXXXX)
PEER=
cleanup() { [ -n "$PEER" ] && kill "$PEER" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
echo data > "$W/f"
export XDG_CONFIG_HOME=$W/cfg

meet() {  # KIND PATTERN
  rm -f "$W/port"
  python3 "$here/not_braid_peer.py" "$1" > "$W/port" &
  PEER=$!
  for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.05; done
  local port; port=$(cat "$W/port")
  [ -n "$port" ] || fail "the $1 peer did not start"
  local t0=$SECONDS
  timeout 30 "$braid" send "$W/f" "127.0.0.1:$port" > /dev/null 2> "$W/err"; local rc=$?
  kill "$PEER"; wait "$PEER" 2>/dev/null; PEER=
  [ $rc -eq 3 ] || fail "$1: exit $rc, expected 3: $(cat "$W/err")"
  [ "$(wc -l < "$W/err")" -eq 1 ] || fail "$1: more than one line: $(cat "$W/err")"
  grep -q "braid send: 127.0.0.1:$port $2" "$W/err" || fail "$1: expected '127.0.0.1:$port $2', got: $(cat "$W/err")"
  ! grep -qi "openssl\|ssl routines\|wrong version" "$W/err" || fail "$1: an OpenSSL error reached the user: $(cat "$W/err")"
  [ $((SECONDS - t0)) -le 5 ] || fail "$1: took $((SECONDS - t0)) s to tell"
  echo "$1: $(cat "$W/err")"
}
meet http "is not a braid receiver (it answered like HTTP)"
meet ssh "is not a braid receiver (it answered like SSH)"
meet garbage "is not a braid receiver (it answered with bytes that are not TLS: 00 ff 13 37 ...)"
meet close "closed the connection without answering braid's handshake"
echo PASS
