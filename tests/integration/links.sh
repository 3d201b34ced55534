#!/usr/bin/env bash
# recv --links keep|safe|skip through the real binary over loopback: a tree
# whose links point inside it, to an absolute path, out of it with "..", and
# out of it through another link. One case per run: links.sh BRAID CASE.
#   keep   every link is created as sent (braid follows none of them)
#   safe   (the default) the absolute and escaping links are not created,
#          each is reported on stderr and in the receiver's --json
#          (transfers[0].skipped, with its target and reason); the inside
#          links and every file arrive; exit 0 on both sides
#   skip   no link is created, each is reported
# In every case nothing is created outside the target directory.
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace links

"$BRAID" recv --dir "$W/dst" --links all > /dev/null 2> "$W/bad.err"; rc=$?
[ "$rc" -eq 2 ] && grep -q -- '--links' "$W/bad.err" || fail "--links all: exit $rc, $(cat "$W/bad.err")"

T=$W/src/t
mkdir -p "$T/a/b" "$W/outside"
random_file "$T/f.bin" 100000 f
random_file "$T/a/b/g.bin" 50000 g
ln -s f.bin "$T/inside"             # t/f.bin
ln -s ../../f.bin "$T/a/b/up2"      # t/f.bin
ln -s /etc/passwd "$T/absolute"
ln -s "$W/outside/planted" "$T/absolute-out"
ln -s ../../outside/planted "$T/escape"   # from t: the workspace's outside/
ln -s ../../../../x "$T/a/b/escape-deep"
ln -s .. "$T/top"                   # the target directory itself: inside
ln -s top/../outside "$T/through"   # through the link t/top: out
SAFE="inside a/b/up2 top"
UNSAFE="absolute absolute-out escape a/b/escape-deep through"
touch "$W/marker"

mode=()
[ "$CASE" = safe ] || mode=(--links "$CASE")
rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst/in" --listen 127.0.0.1:0 --code links-test$CODE_SUFFIX --yes --once \
  "${mode[@]}" --json "$W/recv.json" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
RECV_PID=$!
for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
[ -n "$PORT" ] || fail "receiver did not start"
XDG_CONFIG_HOME=$W/scfg "$BRAID" send --code links-test$CODE_SUFFIX "$T" "127.0.0.1:$PORT" > "$W/send.out" 2> "$W/send.err"
rc=$?
[ "$rc" -eq 0 ] || fail "send exited $rc"
wait_recv; [ "$RECV_RC" -eq 0 ] || fail "recv exited $RECV_RC"
D=$W/dst/in/t
cmp "$T/f.bin" "$D/f.bin" && cmp "$T/a/b/g.bin" "$D/a/b/g.bin" || fail "the files differ"

created() { [ -L "$D/$1" ] && [ "$(readlink "$D/$1")" = "$(readlink "$T/$1")" ]; }
reported() {
  python3 - "$W/recv.json" "t/$1" "$(readlink "$T/$1")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))['transfers'][0]
sys.exit(0 if any(e['path'] == sys.argv[2] and e['link_target'] == sys.argv[3] and e['reason'] for e in r['skipped']) else 1)
PY
}
case "$CASE" in
  keep) KEEP="$SAFE $UNSAFE"; DROP="" ;;
  safe) KEEP="$SAFE"; DROP="$UNSAFE" ;;
  skip) KEEP=""; DROP="$SAFE $UNSAFE" ;;
  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
for l in $KEEP; do created "$l" || fail "the link $l was not created as sent"; done
for l in $DROP; do
  [ ! -e "$D/$l" ] && [ ! -L "$D/$l" ] || fail "the link $l was created"
  reported "$l" || fail "the link $l is not in the receiver's report: $(cat "$W/recv.json")"
  grep -q "not creating the link 't/$l'" "$W/recv.err" || fail "no line on stderr for $l"
done
# Nothing outside the target: no file newer than the start anywhere but in the target and the workspace's own files.
OUT=$(find "$W" -newer "$W/marker" ! -path "$W/dst*" ! -path "$W/src*" ! -path "$W/rcfg*" ! -path "$W/scfg*" \
  ! -name 'recv.*' ! -name 'send.*' ! -path "$W" 2>/dev/null)
[ -z "$OUT" ] || fail "created outside the target: $OUT"
[ -z "$(ls -A "$W/outside")" ] || fail "something landed in outside/"
[ -z "$(find "$W/dst" -name '.braid-*')" ] || fail "temporary files left"
echo "PASS [$CASE]"
