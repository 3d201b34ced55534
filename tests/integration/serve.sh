#!/usr/bin/env bash
# `braid serve` through the real binary over loopback (issue 17): a temp
# config and state dir, files sent with `braid send`, `braid history`, the
# dashboard's API with and without its token, offers that wait for
# `braid accept` / `braid refuse` (and time out), a bad config, a restart.
# One case per run: serve.sh BRAID_BINARY CASE.
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace serve
SERVE_PID=
stop_serve() {
  [ -n "$SERVE_PID" ] || return 0
  kill -TERM "$SERVE_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.05; done
  wait "$SERVE_PID" 2>/dev/null; SERVE_RC=$?
  SERVE_PID=
}
trap 'stop_serve; cleanup' EXIT
STATE=$W/state

# config [extra TOML...]: writes $W/serve.toml (loopback only, port 0 everywhere).
config() {
  cat > "$W/serve.toml" <<TOML
state_dir = "$STATE"
$1
[receive]
listen = ["127.0.0.1:0"]
dir = "$W/dst"
announce = false
[dashboard]
listen = "127.0.0.1:0"
$2
TOML
}

# start_serve [ARGS…]: braid serve --foreground ARGS; sets PORT, CODE, DASH (dashboard port), TOKEN.
start_serve() {
  rm -f "$W/serve.out"
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" serve --config "$W/serve.toml" --foreground "$@" \
    > "$W/serve.out" 2> "$W/serve.err" < /dev/null &
  SERVE_PID=$!
  for _ in $(seq 200); do grep -q "state in" "$W/serve.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(sed -n 's/^braid: code .* listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$W/serve.out")
  CODE=$(sed -n 's/^braid: code \([^ ]*\) listening on.*/\1/p' "$W/serve.out")
  DASH=$(sed -n 's|^braid serve: dashboard http://127\.0\.0\.1:\([0-9]*\)/?token=.*|\1|p' "$W/serve.out")
  [ -n "$PORT" ] && [ -n "$CODE" ] || fail "braid serve did not start"
  TOKEN=$(cat "$STATE/dashboard.token" 2>/dev/null)
}

# send NAME BYTES [code]: sends $W/src/NAME (seeded) in the background; SEND_PID.
send_bg() {
  random_file "$W/src/$1" "$2" "$1"
  BRAID_CODE=${3:-} XDG_CONFIG_HOME=$W/scfg "$BRAID" send "$W/src/$1" "127.0.0.1:$PORT" \
    > "$W/send.out" 2> "$W/send.err" < /dev/null &
  SEND_PID=$!
}
send_wait() { wait "$SEND_PID"; SEND_RC=$?; SEND_PID=; }
b() { XDG_CONFIG_HOME=$W/rcfg "$BRAID" "$@" --state-dir "$STATE"; }

# wait_offer: until `braid offers` lists one; sets OFFER (its id).
wait_offer() {
  OFFER=
  for _ in $(seq 200); do
    OFFER=$(b offers 2>/dev/null | sed -n 's/^\([0-9]*\)  .*/\1/p' | head -1)
    [ -n "$OFFER" ] && return 0
    sleep 0.05
  done
  fail "no offer waited"
}

api() { curl -s -o "$W/api.out" -w '%{http_code}' "$@"; }

case "$CASE" in
  history)  # a paired sender, accepted; then pinned it sends without asking; history lists both
    config "" ""
    start_serve
    [ "$(stat -c %a "$STATE/control.sock")" = 600 ] || fail "control.sock is not 0600"
    [ "$(stat -c %a "$STATE/dashboard.token")" = 600 ] || fail "dashboard.token is not 0600"
    send_bg first.bin 3000000 "$CODE"
    wait_offer  # it paired in this very session: it waits
    grep -q "it paired with the code in this session" < <(b offers) || fail "the offer does not say why it waits"
    b accept "$OFFER" > /dev/null || fail "braid accept failed"
    send_wait
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC after accept"
    cmp -s "$W/src/first.bin" "$W/dst/first.bin" || fail "first.bin did not arrive"
    send_bg second.bin 2000000   # pinned now: no code, no question
    send_wait
    [ "$SEND_RC" -eq 0 ] || fail "the pinned sender's send exited $SEND_RC"
    for _ in $(seq 100); do [ "$(b history --json | grep -c '"id"')" -ge 2 ] && break; sleep 0.05; done
    b history > "$W/history.out"
    grep -q "^1 .* vm .* 1 .*2.9 MiB .*verified" "$W/history.out" || grep_q "verified" "$W/history.out" || fail "history lacks the first transfer"
    [ "$(grep -c verified "$W/history.out")" -eq 2 ] || fail "history does not list both transfers"
    b history 2 | grep_q '"bytes": 2000000' || fail "braid history 2 does not show its report"
    # The dashboard: nothing without the token, JSON with it.
    [ "$(api "http://127.0.0.1:$DASH/api/history")" = 403 ] || fail "the dashboard answered without the token"
    [ "$(api "http://127.0.0.1:$DASH/api/history" -H "Authorization: Bearer wrong$TOKEN")" = 403 ] || fail "a wrong token passed"
    [ "$(api "http://127.0.0.1:$DASH/?token=wrong")" = 403 ] || fail "a wrong login link passed"
    [ "$(api "http://127.0.0.1:$DASH/api/history" -H "Authorization: Bearer $TOKEN")" = 200 ] || fail "the token was refused"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["transfers"])==2 and d["transfers"][1]["bytes"]==2000000, d' \
      "$W/api.out" || fail "/api/history is not the history"
    [ "$(api "http://127.0.0.1:$DASH/api/live" -H "Authorization: Bearer $TOKEN")" = 200 ] || fail "/api/live refused"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d["transfers"], list)' "$W/api.out" \
      || fail "/api/live is not JSON of transfers"
    # The login link sets an HttpOnly cookie that then opens the page.
    curl -s -D "$W/login.h" -o /dev/null "http://127.0.0.1:$DASH/?token=$TOKEN"
    grep -qi "^set-cookie: braid_dashboard=$TOKEN; HttpOnly; SameSite=Strict" "$W/login.h" || fail "no HttpOnly cookie from the login link"
    [ "$(api "http://127.0.0.1:$DASH/" -H "Cookie: braid_dashboard=$TOKEN")" = 200 ] || fail "the cookie does not open the page"
    grep -q "braid serve" "$W/api.out" || fail "the page is not the dashboard"
    [ "$(api -X POST -d '' "http://127.0.0.1:$DASH/api/offers/1/accept" -H "Cookie: braid_dashboard=$TOKEN")" = 403 ] \
      || fail "a POST without X-Braid passed"
    # Pinned peers renamed and forgotten from the dashboard's API.
    LABEL=$(XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers | awk 'NR == 3 {print $1}')
    [ "$(api "http://127.0.0.1:$DASH/api/peers" -H "Authorization: Bearer $TOKEN")" = 200 ] && grep -q "\"label\":\"$LABEL\"" "$W/api.out" \
      || fail "/api/peers does not list '$LABEL'"
    [ "$(api -X POST -d '' "http://127.0.0.1:$DASH/api/peers/rename?label=$LABEL&to=desk" -H "Authorization: Bearer $TOKEN" -H 'X-Braid: 1')" = 200 ] \
      || fail "rename over HTTP failed: $(cat "$W/api.out")"
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers | grep_q "^  desk " || fail "the peer was not renamed"
    [ "$(api -X POST -d '' "http://127.0.0.1:$DASH/api/peers/forget?label=nobody" -H "Authorization: Bearer $TOKEN" -H 'X-Braid: 1')" = 400 ] \
      || fail "forgetting an unknown label did not fail"
    [ "$(api -X POST -d '' "http://127.0.0.1:$DASH/api/peers/forget?label=desk" -H "Authorization: Bearer $TOKEN" -H 'X-Braid: 1')" = 200 ] \
      || fail "forget over HTTP failed: $(cat "$W/api.out")"
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers | grep_q "No known peers" || fail "the peer was not forgotten"
    # A restart keeps the history.
    stop_serve
    [ "$SERVE_RC" -eq 0 ] || fail "braid serve exited $SERVE_RC on SIGTERM"
    start_serve
    [ "$(b history --json | grep -c '"id"')" -eq 2 ] || fail "the history did not survive a restart"
    ;;
  many)  # 3 pinned peers send at once, each into its own directory; a newcomer waits and is accepted over
          # HTTP; braid history lists them all, across restarts
    config "" ""
    start_serve
    for i in 1 2 3; do  # pair each (its offer waits: accepted), with the code live now
      LIVE=$(sed -n 's/^braid: code \([^ ]*\).*/\1/p' "$W/serve.out" | tail -1)
      random_file "$W/src/pair$i.bin" 1000 "pair$i"
      BRAID_CODE=$LIVE XDG_CONFIG_HOME=$W/s$i "$BRAID" send "$W/src/pair$i.bin" "127.0.0.1:$PORT" \
        > "$W/send$i.out" 2> "$W/send$i.err" < /dev/null &
      SEND_PID=$!
      wait_offer
      b accept "$OFFER" > /dev/null
      send_wait
      [ "$SEND_RC" -eq 0 ] || fail "pairing send $i exited $SEND_RC"
    done
    mapfile -t LABELS < <(XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers | awk 'NR >= 3 && NF >= 2 {print $1}')
    [ "${#LABELS[@]}" -eq 3 ] || fail "not 3 pinned peers: ${LABELS[*]}"
    stop_serve
    PEERS=
    for i in 0 1 2; do PEERS+=$'\n'"[peers.${LABELS[$i]}]"$'\n'"dir = \"$W/own$i\""; done
    config "" "$PEERS"
    start_serve
    for i in 1 2 3; do
      random_file "$W/src/big$i.bin" 4000000 "big$i"
      XDG_CONFIG_HOME=$W/s$i "$BRAID" send "$W/src/big$i.bin" "127.0.0.1:$PORT" > "$W/send$i.out" 2> "$W/send$i.err" < /dev/null &
      PIDS[$i]=$!
    done
    for i in 1 2 3; do wait "${PIDS[$i]}" || fail "pinned sender $i exited $? (an offer of a pinned peer waited?)"; done
    for i in 1 2 3; do
      j=$((i - 1))
      cmp -s "$W/src/big$i.bin" "$W/own$j/big$i.bin" || fail "big$i.bin is not in ${LABELS[$j]}'s own directory"
    done
    # A newcomer: its offer waits; the dashboard's HTTP API accepts it.
    LIVE=$(sed -n 's/^braid: code \([^ ]*\).*/\1/p' "$W/serve.out" | tail -1)
    random_file "$W/src/new.bin" 1000 new
    BRAID_CODE=$LIVE XDG_CONFIG_HOME=$W/s4 "$BRAID" send "$W/src/new.bin" "127.0.0.1:$PORT" > "$W/send4.out" 2> "$W/send4.err" < /dev/null &
    SEND_PID=$!
    wait_offer
    [ "$(api -X POST -d '' "http://127.0.0.1:$DASH/api/offers/$OFFER/accept" -H "Authorization: Bearer $TOKEN" -H 'X-Braid: 1')" = 200 ] \
      || fail "the dashboard did not accept the newcomer's offer"
    send_wait
    [ "$SEND_RC" -eq 0 ] || fail "the newcomer's send exited $SEND_RC"
    cmp -s "$W/src/new.bin" "$W/dst/new.bin" || fail "the newcomer's file is not in the default directory"
    for _ in $(seq 100); do [ "$(b history --json | grep -c '"id"')" -ge 7 ] && break; sleep 0.05; done
    stop_serve
    start_serve
    b history > "$W/history.out"
    [ "$(grep -c ' verified$' "$W/history.out")" -eq 7 ] || fail "history does not list the 7 transfers after a restart"
    for i in 0 1 2; do
      [ "$(grep -c " ${LABELS[$i]} .* 3.8 MiB " "$W/history.out")" -eq 1 ] || fail "history lacks ${LABELS[$i]}'s 4 MB transfer"
    done
    ;;
  live)  # during a transfer: /api/live has per-path samples with a rate, and SSE pushes them
    config "" ""
    start_serve
    send_bg pair.bin 1000 "$CODE"
    wait_offer
    b accept "$OFFER" > /dev/null
    send_wait
    random_file "$W/src/slow.bin" 12000000 slow
    XDG_CONFIG_HOME=$W/scfg "$BRAID" send --rate-limit 32Mbit/s "$W/src/slow.bin" "127.0.0.1:$PORT" \
      > "$W/send.out" 2> "$W/send.err" < /dev/null &
    SEND_PID=$!
    OK=
    for _ in $(seq 100); do
      api "http://127.0.0.1:$DASH/api/live" -H "Authorization: Bearer $TOKEN" > /dev/null
      if python3 - "$W/api.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pts = [p for t in d["transfers"] for s in t["samples"] for p in s["paths"] if p["rate_bytes_per_sec"] > 0]
sys.exit(0 if len(pts) >= 2 and all("rtt_ms" in p and "->" in p["path"] for p in pts) else 1)
PY
      then OK=1; break; fi
      sleep 0.1
    done
    [ -n "$OK" ] || fail "/api/live never had two samples of a path's throughput during the transfer"
    curl -s --max-time 3 -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$DASH/api/events" > "$W/events.out"
    grep -q '^event: live' "$W/events.out" || fail "no Server-Sent Event from /api/events"
    grep -q '"transfers":\[{' "$W/events.out" || fail "the events carried no running transfer"
    send_wait
    [ "$SEND_RC" -eq 0 ] || fail "the slow send exited $SEND_RC"
    ;;
  refuse)  # every offer waits; braid refuse: the sender exits with the reason
    config "" $'[accept]\nfrom = "none"'
    start_serve
    send_bg f.bin 100000 "$CODE"
    wait_offer
    b refuse "$OFFER" --reason "not today, thanks" > /dev/null || fail "braid refuse failed"
    send_wait
    [ "$SEND_RC" -ne 0 ] || fail "the refused send exited 0"
    grep -q "not today, thanks" "$W/send.err" || fail "the sender did not print the refusal's reason"
    [ ! -e "$W/dst/f.bin" ] || fail "a refused file arrived"
    b offers | grep_q "No offer is waiting" || fail "the refused offer still waits"
    b accept "$OFFER" 2> "$W/again.err" && fail "a refused offer could be accepted"
    grep -q "no offer $OFFER is waiting" "$W/again.err" || fail "accepting it twice does not say why not"
    # Accepted through the dashboard's HTTP API this time.
    send_bg g.bin 100000
    wait_offer
    [ "$(api -X POST -d '' "http://127.0.0.1:$DASH/api/offers/$OFFER/accept" -H "Authorization: Bearer $TOKEN" -H 'X-Braid: 1')" = 200 ] \
      || fail "the dashboard did not accept the offer"
    send_wait
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC after the dashboard's accept"
    cmp -s "$W/src/g.bin" "$W/dst/g.bin" || fail "g.bin did not arrive"
    # A probe writes nothing: it is not asked about, even when every offer waits.
    XDG_CONFIG_HOME=$W/scfg timeout 60 "$BRAID" probe --seconds 1 "127.0.0.1:$PORT" > "$W/probe.out" 2> "$W/probe.err" < /dev/null \
      || fail "braid probe against serve exited $?"
    ;;
  timeout)  # nobody decides: refused after [accept] timeout, with the reason
    config "" $'[accept]\nfrom = "none"\ntimeout = "1s"'
    start_serve
    send_bg f.bin 1000 "$CODE"
    send_wait
    [ "$SEND_RC" -ne 0 ] || fail "an undecided offer was not refused"
    grep -q "nobody accepted the offer within 1 s" "$W/send.err" || fail "the sender did not say why"
    ;;
  peer-dir)  # a pinned peer's own directory
    config "" $'[peers.vm]\ndir = "'"$W/vm"'"'
    # pair first (waits: accepted), then the second send goes to vm's directory
    start_serve
    send_bg a.bin 1000 "$CODE"
    wait_offer
    b accept "$OFFER" > /dev/null
    send_wait
    [ "$SEND_RC" -eq 0 ] || fail "send exited $SEND_RC"
    LABEL=$(XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers | awk 'NR==3 {print $1}')
    [ "$LABEL" = vm ] || { echo "SKIP: the sender pinned as '$LABEL', not 'vm'"; exit 77; }
    cmp -s "$W/src/a.bin" "$W/vm/a.bin" || fail "vm's file is not in its own directory"
    ;;
  unit)  # the shipped system unit's command, with what systemd gives it (STATE_DIRECTORY, XDG_CONFIG_HOME=/etc -> here)
    UNIT=$(dirname "$0")/../../dist/systemd/system/braid-serve.service
    CMD=$(sed -n 's/^ExecStart=braid //p' "$UNIT")
    [ "$CMD" = "serve --foreground" ] || fail "the unit runs 'braid $CMD'"
    grep -q '^StateDirectory=braid$' "$UNIT" || fail "the unit has no StateDirectory"
    # No flags: the config from its default place ($XDG_CONFIG_HOME/braid/serve.toml; it only keeps this
    # test off the LAN's mDNS), every other default, the state where systemd says.
    mkdir -p "$W/rcfg/braid"
    printf '[receive]\nannounce = false\n' > "$W/rcfg/braid/serve.toml"
    STATE_DIRECTORY=$STATE XDG_CONFIG_HOME=$W/rcfg "$BRAID" $CMD > "$W/serve.out" 2> "$W/serve.err" < /dev/null &
    SERVE_PID=$!
    for _ in $(seq 200); do grep -q "state in" "$W/serve.out" 2>/dev/null && break; sleep 0.05; done
    if ! grep -q "state in" "$W/serve.out" && grep -qi "in use" "$W/serve.err"; then
      echo "SKIP: the default ports (7878, 7879) are taken on this host: $(cat "$W/serve.err")"
      exit 77
    fi
    grep -q "state in $STATE, files into $STATE/incoming" "$W/serve.out" || fail "the defaults under systemd are not STATE_DIRECTORY"
    grep -q "dashboard http://127.0.0.1:7879/?token=" "$W/serve.out" || fail "the dashboard is not on 127.0.0.1:7879 by default"
    grep -q "announced on the local network" "$W/serve.err" && fail "the default config file was not read (it announced)"
    [ -S "$STATE/control.sock" ] || fail "no control socket in the state directory"
    stop_serve
    [ "$SERVE_RC" -eq 0 ] || fail "SIGTERM did not stop it with 0 (exit $SERVE_RC)"
    ;;
  background)  # without --foreground: returns once listening, says its pid; a second serve on the same state refuses
    config "" ""
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" serve --config "$W/serve.toml" > "$W/serve.out" 2> "$W/serve.err" < /dev/null
    [ $? -eq 0 ] || fail "braid serve did not return 0 once in the background"
    SERVE_PID=$(sed -n 's/^braid serve: running in the background as pid \([0-9]*\).*/\1/p' "$W/serve.out")
    [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" || fail "no pid, or it is not running"
    grep -q "dashboard http://127.0.0.1:[0-9]*/?token=" "$W/serve.out" || fail "the login link was not printed"
    b offers | grep_q "No offer is waiting" || fail "the background serve does not answer on its control socket"
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" serve --config "$W/serve.toml" --foreground > /dev/null 2> "$W/second.err"
    [ $? -eq 1 ] && grep -q "another braid serve runs with the state directory" "$W/second.err" || fail "a second serve started"
    kill -TERM "$SERVE_PID"
    for _ in $(seq 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$SERVE_PID" 2>/dev/null && fail "SIGTERM did not stop the background serve"
    SERVE_PID=
    grep -q "braid serve: stopped (SIGTERM)" "$STATE/serve.log" || fail "serve.log does not say it stopped"
    ;;
  share)  # the browser share through curl: the token, the manifest, chunks and their hashes, CORS, an upload
    # Loopback only: the share listens on 127.0.0.1 and advertises 127.0.0.2 beside it (the browser
    # test reaches 127.0.0.2 through a proxy); CORS is judged by the Origin a page sends.
    mkdir -p "$W/share/tree/sub"
    random_file "$W/share/big.bin" 2600000 big
    random_file "$W/share/tree/sub/small.txt" 100 small
    config "" "[share]
listen = \"127.0.0.1:0\"
addresses = [\"127.0.0.1\", \"127.0.0.2\"]
upload_dir = \"$W/up\"
upload_max = \"8MiB\""
    start_serve --share "$W/share/big.bin" "$W/share/tree"
    LINK=$(sed -n 's/^braid serve: share //p' "$W/serve.out")
    SP=$(echo "$LINK" | sed -n 's|^http://127\.0\.0\.1:\([0-9]*\)/share/[0-9a-f]\{64\}/$|\1|p')
    [ -n "$SP" ] || fail "no share link in the output: $LINK"
    grep -q '▀' "$W/serve.out" || fail "no QR code (half blocks) printed"
    [ "${LINK##*/share/}" != "$TOKEN/" ] || fail "the share's token is the dashboard's"
    S=http://127.0.0.1:$SP
    TOK=${LINK##*/share/}; TOK=${TOK%/}
    for path in / /share/ /share/0000/api "/share/${TOK:0:63}/api" "/share/${TOK}x/api" "/share/${TOK^^}/api" \
        "/share/$TOK"; do
      [ "$(api "$S$path")" = 403 ] || fail "$path without the token: not 403"
      [ -s "$W/api.out" ] && fail "$path without the token: a body came with the 403"
    done
    [ "$(api -X PUT -H "Content-Type: application/octet-stream" --data-binary x "$S/share/${TOK}x/upload/1/chunk/0")" = 403 ] || fail "an upload without the token: not 403"
    [ "$(api "${LINK}")" = 200 ] && grep -q "share.js" "$W/api.out" || fail "no page with the token"
    [ "$(api "${LINK}api")" = 200 ] || fail "no manifest"
    python3 - "$W/api.out" "$SP" <<'PY' || fail "the manifest is wrong"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["chunk_size"] == 1 << 20, m["chunk_size"]
names = [f["name"] for f in m["files"]]
assert names == ["big.bin", "tree/sub/small.txt"], names
assert m["files"][0]["size"] == 2600000 and len(m["files"][0]["chunks"]) == 3, m["files"][0]
assert m["addresses"] == ["http://127.0.0.1:%s" % sys.argv[2], "http://127.0.0.2:%s" % sys.argv[2]], m["addresses"]
assert m["upload"] is True
PY
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); [print(i,n,h) for i,f in enumerate(m["files"]) for n,h in enumerate(f["chunks"])]' \
      "$W/api.out" > "$W/chunks"
    while read -r id n h; do
      [ "$(api "${LINK}f/$id/chunk/$n")" = 200 ] || fail "chunk $id/$n not served"
      [ "$(sha256sum < "$W/api.out" | cut -d' ' -f1)" = "$h" ] || fail "chunk $id/$n does not match its SHA-256"
    done < "$W/chunks"
    api "${LINK}f/0/chunk/0" > /dev/null
    cmp -s "$W/api.out" <(head -c 1048576 "$W/share/big.bin") || fail "chunk 0 is not the file's first MiB"
    [ "$(api "${LINK}f/0/chunk/3")" = 404 ] || fail "a chunk past the end is not 404"
    # CORS: an Origin that is one of the server's own addresses is allowed, any other is not.
    curl -s -D "$W/h2" -o /dev/null -H "Origin: http://127.0.0.2:$SP" "${LINK}f/0/chunk/1"
    grep -qi "^Access-Control-Allow-Origin: http://127.0.0.2:$SP" "$W/h2" || fail "no CORS header for the server's own origin"
    curl -s -D "$W/h3" -o /dev/null -H "Origin: http://evil.example:$SP" "${LINK}f/0/chunk/1"
    grep -qi "^Access-Control-Allow-Origin" "$W/h3" && fail "CORS allowed a foreign origin"
    curl -s -D "$W/h4" -o /dev/null -X OPTIONS -H "Origin: http://127.0.0.2:$SP" \
      -H "Access-Control-Request-Method: PUT" "${LINK}upload/1/chunk/0"
    grep -qi "^Access-Control-Allow-Methods:.*PUT" "$W/h4" || fail "the preflight does not allow PUT"
    curl -s -D "$W/h5" -o /dev/null -X OPTIONS -H "Origin: http://127.0.0.2:$SP" "$S/share/0000/upload/1/chunk/0"
    grep -qi "^Access-Control-Allow" "$W/h5" && fail "a preflight without the token got CORS headers"
    # An upload in chunks: a bad chunk refused, the file under its name only when whole and verified.
    random_file "$W/up.bin" 2500000 up
    split -b 1048576 -d -a 1 "$W/up.bin" "$W/part."
    HASHES=$(for p in "$W"/part.?; do sha256sum < "$p" | cut -d' ' -f1; done | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().split()))')
    [ "$(api -X POST -H 'Content-Type: application/json' --data "{\"name\":\"big\",\"size\":9437184,\"chunks\":$(python3 -c 'import json; print(json.dumps(["0"*64]*9))')}" "${LINK}upload")" = 409 ] \
      || fail "an upload above upload_max was not refused"
    [ "$(api -X POST --data "{\"name\":\"../x\",\"size\":1,\"chunks\":[\"$(printf %064d 0)\"]}" "${LINK}upload")" = 409 ] \
      || fail "an upload named ../x was not refused"
    [ "$(api -X POST --data "{\"name\":\"in/up.bin\",\"size\":2500000,\"chunks\":$HASHES}" "${LINK}upload")" = 200 ] \
      || fail "the upload did not start: $(cat "$W/api.out")"
    UP=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$W/api.out")
    cp "$W/part.1" "$W/bad.1"; printf 'X' | dd of="$W/bad.1" bs=1 seek=1000 conv=notrunc 2>/dev/null
    CODE1=$(api -X PUT -H "Content-Type: application/octet-stream" --data-binary @"$W/bad.1" "${LINK}upload/$UP/chunk/1")
    [ "$CODE1" = 422 ] || fail "a corrupt chunk was not refused ($CODE1)"
    [ "$(api -X PUT -H "Content-Type: application/octet-stream" --data-binary @"$W/part.2" "${LINK}upload/$UP/chunk/2")" = 200 ] || fail "chunk 2 refused"
    [ "$(api -X PUT -H "Content-Type: application/octet-stream" --data-binary @"$W/part.0" -H "Origin: http://127.0.0.2:$SP" "${LINK}upload/$UP/chunk/0")" = 200 ] \
      || fail "chunk 0 refused"
    [ -e "$W/up/in/up.bin" ] && fail "the upload has its name before every chunk is in"
    ls -a "$W/up/in" | grep_q '^\.braid-upload\.' || fail "no temporary file while the upload is incomplete"
    [ "$(api -X PUT -H "Content-Type: application/octet-stream" --data-binary @"$W/part.1" "${LINK}upload/$UP/chunk/1")" = 200 ] || fail "the good chunk 1 refused"
    grep -q '"complete":true' "$W/api.out" || fail "the last chunk did not complete the upload"
    cmp -s "$W/up.bin" "$W/up/in/up.bin" || fail "the uploaded file is not identical"
    [ "$(ls -a "$W/up/in" | grep -c braid-upload)" = 0 ] || fail "a temporary file was left"
    [ "$(api -X POST --data "{\"name\":\"in/up.bin\",\"size\":1,\"chunks\":[\"$(printf %064d 0)\"]}" "${LINK}upload")" = 409 ] \
      || fail "an upload over an existing file was not refused"
    # serve's own counters per local address: the three good upload chunks (not the corrupt one), and
    # the chunks served — all over 127.0.0.1, the address curl came in on.
    [ "$(api "${LINK}stats")" = 200 ] || fail "no stats"
    python3 - "$W/api.out" <<'PY' || fail "the share's counters are wrong: $(cat "$W/api.out")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["uploaded"] == {"127.0.0.1": {"chunks": 3, "bytes": 2500000}}, s["uploaded"]
assert list(s["served"]) == ["127.0.0.1"] and s["served"]["127.0.0.1"]["bytes"] > 2600000, s["served"]
PY
    ;;
  share-https)  # [share] cert and key: the same share over HTTPS (cpp-httplib's SSLServer, OpenSSL 3)
    command -v openssl > /dev/null || { echo "SKIP: no openssl command to make a certificate"; exit 77; }
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -keyout "$W/key.pem" -out "$W/cert.pem" \
      2> /dev/null || fail "openssl could not make a certificate"
    random_file "$W/a.bin" 1500000 a
    config "" "[share]
listen = \"127.0.0.1:0\"
addresses = [\"127.0.0.1\"]
cert = \"$W/cert.pem\"
key = \"$W/key.pem\""
    start_serve --share "$W/a.bin"
    LINK=$(sed -n 's/^braid serve: share //p' "$W/serve.out")
    case "$LINK" in https://127.0.0.1:*/share/*/) ;; *) fail "not an https link: $LINK" ;; esac
    [ "$(api --cacert "$W/cert.pem" "${LINK}api")" = 200 ] || fail "no manifest over HTTPS"
    grep -q '"addresses":\["https://127.0.0.1:' "$W/api.out" || fail "the page is not told https origins"
    [ "$(api --cacert "$W/cert.pem" "${LINK}f/0/chunk/1")" = 200 ] || fail "no chunk over HTTPS"
    cmp -s "$W/api.out" <(tail -c +1048577 "$W/a.bin") || fail "chunk 1 over HTTPS is not the file's second MiB"
    [ "$(api "${LINK/https/http}api")" = 000 ] || fail "plain HTTP answered on the HTTPS share"
    ;;
  bad-config)  # one line naming the key and its line, exit 2
    printf '[receive]\ndir = "/tmp"\nlistn = ["x"]\n' > "$W/serve.toml"
    "$BRAID" serve --config "$W/serve.toml" --foreground > "$W/serve.out" 2> "$W/serve.err"
    RC=$?
    [ "$RC" -eq 2 ] || fail "a bad config exited $RC, not 2"
    [ "$(wc -l < "$W/serve.err")" -eq 1 ] || fail "a bad config said more than one line"
    grep -q "serve.toml:3: key 'receive.listn': unknown key" "$W/serve.err" || fail "the line does not name the key and line"
    "$BRAID" serve --config "$W/missing.toml" --foreground 2> "$W/serve.err"
    [ $? -eq 2 ] || fail "a missing --config did not exit 2"
    ;;
  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
