#!/usr/bin/env bash
# UDP lanes through the real `braid` binary over loopback. One case per run:
# udp.sh BRAID_BINARY CASE (two-lanes, mixed, rate-limit, kill-control, transport, port-taken, slow-disk);
# a UDP lane killed mid-transfer and UDP blocked on the path run in process
# (tests/integration/session_test.cpp: faults through ConnectOptions::faults). Each
# case starts `braid recv` (127.0.0.1, and ::1 when IPv6 works), runs
# `braid send` with lanes named by hand, and checks the file's SHA-256, the
# exit codes, the --json report and the logs.
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace udp

ipv6_ok() { python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null; }

start_recv() {
  local listen=(--listen 127.0.0.1:0)
  ipv6_ok && listen+=(--listen '[::1]:0')
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" "${listen[@]}" --code udp-test$CODE_SUFFIX --yes ${ONCE---once} \
    --json "$W/recv.json" --log "$W/recv.log" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  PORT6=$(grep -o '\[::1\]:[0-9]*' "$W/recv.out" | head -1 | sed 's/.*://')
  [ -n "$PORT" ] || fail "receiver did not start"
}

send() {
  local start end
  start=$(date +%s.%N)
  XDG_CONFIG_HOME=$W/scfg "$BRAID" send --code udp-test$CODE_SUFFIX --json "$W/send.json" --log "$W/send.log" "$@" \
    > "$W/send.out" 2> "$W/send.err"
  SEND_RC=$?
  end=$(date +%s.%N)
  ELAPSED=$(python3 -c "print($end - $start)")
}

# udp_local_count ADDR:PORT N: the receiver logged exactly N UDP lanes open on ADDR:PORT.
udp_local_count() {
  [ "$(grep '"lane_open"' "$W/recv.log" | grep '"kind":"udp"' | grep -cF "\"local\":\"$1\"")" = "$2" ]
}

make_file() { head -c "$1" /dev/urandom > "$W/src/data.bin"; }

check_identical() {
  [ "$SEND_RC" = 0 ] || fail "send exited $SEND_RC"
  wait_recv
  [ "$RECV_RC" = 0 ] || fail "recv exited $RECV_RC"
  [ "$(sha256sum < "$W/src/data.bin")" = "$(sha256sum < "$W/dst/data.bin")" ] || fail "SHA-256 differs"
}

# py EXPR...: runs python with `s` (send.json) and `r` (recv.json) loaded; exits 1 with the message on failure.
check_json() {
  python3 - "$W/send.json" "$W/recv.json" "$1" <<'PY' || fail "report check failed: $1"
import json, sys
s = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
ok = eval(sys.argv[3])
if not ok:
    print(json.dumps(s["lanes"], indent=1), file=sys.stderr)
    sys.exit(1)
PY
}

case "$CASE" in
  crash-rerun)
    # The sender dies (SIGKILL) mid-transfer over a UDP lane and the same
    # command runs again at once, on the same receiver: the first session
    # has lost its only message lane but its UDP lane lives on, so it would
    # wait its grace holding the transfer's journal; the same sender's new
    # session ends it at once and resumes what arrived.
    make_file $((128 << 20))
    ONCE= start_recv
    XDG_CONFIG_HOME=$W/scfg python3 "$(dirname "$0")/kill_when.py" "$W/send.log" $((32 << 20)) -- \
      "$BRAID" send --code udp-test$CODE_SUFFIX --rate-limit 400Mbit/s --log "$W/send.log" \
      --lane "udp:127.0.0.1=127.0.0.1:$PORT" "$W/src/data.bin" "127.0.0.1:$PORT" > "$W/send.out" 2> "$W/send.err"
    [ $? -eq 137 ] || fail "the sender was not killed mid-transfer"
    send --lane "udp:127.0.0.1=127.0.0.1:$PORT" "$W/src/data.bin" "127.0.0.1:$PORT"
    [ "$SEND_RC" = 0 ] || fail "the re-run exited $SEND_RC: $(cat "$W/send.err")"
    [ "$(sha256sum < "$W/src/data.bin")" = "$(sha256sum < "$W/dst/data.bin")" ] || fail "SHA-256 differs"
    grep -q 'the sender started a new session' "$W/recv.log" || fail "the first session did not end for the new one"
    python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s['resumed_bytes'] > 0 else 1)" \
      "$W/send.json" || fail "nothing was resumed"
    kill "$RECV_PID" 2>/dev/null; wait "$RECV_PID" 2>/dev/null
    ;;
  two-lanes)
    # 256 MiB over two UDP lanes: 127.0.0.1 and ::1 (two on 127.0.0.1 without IPv6).
    make_file $((256 << 20))
    start_recv
    second="udp:127.0.0.1=127.0.0.1:$PORT"
    [ -n "$PORT6" ] && second="udp:[::1]=[::1]:$PORT6"
    send --lane "udp:127.0.0.1=127.0.0.1:$PORT" --lane "$second" "$W/src/data.bin" "127.0.0.1:$PORT"
    check_identical
    echo "256 MiB over 2 UDP lanes ($second) in ${ELAPSED}s"
    check_json 's["all_verified"] and [l["kind"] for l in s["lanes"]] == ["udp", "udp"]'
    check_json 'all(l["bytes"] > 0 and l["packets_sent"] > 0 and l["min_rtt_ms"] > 0 for l in s["lanes"])'
    check_json 'sum(l["bytes"] for l in s["lanes"]) == 256 << 20'
    # The packet size follows the path MTU: loopback's 65536 → the 9000 cap.
    [ "$(grep -c '"kind":"udp".*"packet_size":9000' "$W/send.log")" = 2 ] || fail "packet size did not follow the path MTU"
    # Each UDP lane came in on the port number the receiver listens on for TCP.
    want="127.0.0.1:$PORT"; [ -n "$PORT6" ] && want="[::1]:$PORT6"
    udp_local_count "127.0.0.1:$PORT" 1 && udp_local_count "$want" 1 ||
      fail "the UDP lanes are not on the TCP listeners' ports: $(grep '"lane_open"' "$W/recv.log")"
    ;;
  mixed)
    # 1 TCP + 2 UDP data lanes in one session (lane 0 is control only).
    make_file $((128 << 20))
    start_recv
    send --packet-size 1472 --lane "tcp:127.0.0.1=127.0.0.1:$PORT" --lane "udp:127.0.0.1=127.0.0.1:$PORT" \
      --lane "udp:127.0.0.1=127.0.0.1:$PORT" "$W/src/data.bin" "127.0.0.1:$PORT"
    check_identical
    [ "$(grep -c '"kind":"udp".*"packet_size":1472' "$W/send.log")" = 2 ] || fail "--packet-size 1472 was not used"
    out=$("$BRAID" send --packet-size 1100 --lane "udp:127.0.0.1=127.0.0.1:$PORT" "$W/src/data.bin" "127.0.0.1:$PORT" 2>&1) &&
      fail "--packet-size 1100 was accepted"
    echo "$out" | grep_q 'expected auto or a number from 1200 to 9000' || fail "no clear error for --packet-size 1100: $out"
    check_json '[l["kind"] for l in s["lanes"]] == ["tcp", "udp", "udp"]'
    check_json 'all(k in l for l in s["lanes"] if l["kind"] == "udp" for k in ("packets_sent", "packets_lost", "packets_retransmitted", "srtt_ms", "min_rtt_ms", "cc_rate_bytes_per_sec"))'
    check_json 'all(l["packets_sent"] > 0 and l["cc_rate_bytes_per_sec"] > 0 for l in s["lanes"] if l["kind"] == "udp")'
    check_json '"packets_sent" not in s["lanes"][0] and sum(l["bytes"] for l in s["lanes"]) == 128 << 20'
    check_json 'sorted(l["kind"] for l in r["transfers"][0]["lanes"]).count("udp") == 2'
    # Both UDP lanes share the listener's port (one socket, told apart by lane id).
    [ "$(grep -c '"udp_port_fallback"' "$W/recv.log")" = 0 ] || fail "a UDP lane fell back to a port of its own"
    udp_local_count "127.0.0.1:$PORT" 2 ||
      fail "the UDP lanes do not share the TCP listener's port $PORT: $(grep '"lane_open"' "$W/recv.log")"
    ;;
  rate-limit)
    # --rate-limit caps the whole transfer (two UDP lanes share it).
    make_file $((48 << 20))
    start_recv
    # Stray datagrams at the shared port meanwhile (the capped lanes leave
    # its socket room for them): dropped, counted in recv's --json, harmless.
    python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(2000):
    try:
        s.sendto(b"not braid", ("127.0.0.1", int(sys.argv[1])))
    except OSError:
        pass  # the port refused (ICMP) before its first UDP lane opened it
    time.sleep(0.005)' "$PORT" 2>/dev/null &
    JUNK_PID=$!
    send --rate-limit 200Mbit/s --lane "udp:127.0.0.1=127.0.0.1:$PORT" --lane "udp:127.0.0.1=127.0.0.1:$PORT" \
      "$W/src/data.bin" "127.0.0.1:$PORT"
    kill "$JUNK_PID" 2>/dev/null; wait "$JUNK_PID" 2>/dev/null
    check_identical
    check_json "any(p['address'] == '127.0.0.1:$PORT' and p['malformed'] > 0 and p['dropped'] >= p['malformed'] for p in r['udp_ports'])"
    floor=$(python3 -c "print(0.9 * (48 << 20) * 8 / 200e6)")
    echo "48 MiB at --rate-limit 200Mbit/s: ${ELAPSED}s wall (floor ${floor}s)"
    python3 -c "import sys; sys.exit(0 if $ELAPSED >= $floor else 1)" || fail "took ${ELAPSED}s < ${floor}s: above the cap"
    check_json 's["rate_mbit_per_sec"] <= 200 * 1.05'
    check_json 'all(l["cc_rate_bytes_per_sec"] <= 100e6 / 8 * 1.01 for l in s["lanes"])'
    ;;
  kill-control)
    # Lane 0 is the only lane that carries messages, so it carries the UDP
    # pieces' headers; it dies after a few of them (a fault proxy resets it
    # once 8 KB went from the sender through it: the TLS handshake, the
    # offer, udp_open and some 50 of the 128 headers; the rate limit keeps the transfer
    # going for seconds): its path is opened again, the headers go again
    # over the new lane, and every piece still verifies.
    make_file $((128 << 20))
    start_recv
    start_proxy --kill-after 8000
    send --rate-limit 400Mbit/s --lane "udp:127.0.0.1=127.0.0.1:$PORT" "$W/src/data.bin" "127.0.0.1:$PROXY"
    check_identical
    grep '"lane_closed"' "$W/send.log" | grep_q '"lane":0' || fail "lane 0 was not killed"
    grep '"ordered_lane"' "$W/send.log" | grep_q '"headers_resent":[1-9]' || fail "no headers were sent again"
    check_json 's["all_verified"] and any(l["kind"] == "udp" and l["bytes"] > 0 for l in s["lanes"])'
    ;;
  transport)
    # --transport udp: discovered lanes are UDP (lane 0 carries control only);
    # --transport auto on loopback (RTT well under 5 ms) picks TCP and logs why.
    make_file $((32 << 20))
    start_recv
    send --transport udp --streams 2 "$W/src/data.bin" "127.0.0.1:$PORT"
    check_identical
    check_json 'len(s["lanes"]) >= 2 and all(l["kind"] == "udp" for l in s["lanes"])'
    rm -rf "$W/dst"/* "$W/rcfg"/* "$W/scfg"/*
    start_recv
    send --transport auto "$W/src/data.bin" "127.0.0.1:$PORT"
    check_identical
    grep '"transport"' "$W/send.log" | grep_q '"choice":"tcp"' || fail "auto did not log its choice of tcp"
    check_json 'all(l["kind"] == "tcp" for l in s["lanes"])'
    ;;
  port-taken)
    # Another program holds the listener's port number for UDP: the lane
    # takes a free port instead, says why, and the transfer still works.
    make_file $((16 << 20))
    start_recv
    python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", int(sys.argv[1])))
open(sys.argv[2], "w").close(); time.sleep(60)' "$PORT" "$W/holding" &
    HOLDER=$!
    for _ in $(seq 100); do [ -f "$W/holding" ] && break; sleep 0.05; done
    send --lane "udp:127.0.0.1=127.0.0.1:$PORT" "$W/src/data.bin" "127.0.0.1:$PORT"
    kill $HOLDER 2>/dev/null
    check_identical
    grep '"udp_port_fallback"' "$W/recv.log" | grep_q "127.0.0.1:$PORT" || fail "no udp_port_fallback with the reason"
    udp_local_count "127.0.0.1:$PORT" 0 || fail "a lane claims the taken port"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$CASE]"
