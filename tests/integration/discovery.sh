#!/usr/bin/env bash
# Finding the receiver on the local network (DNS-SD over mDNS), through the
# real binary, between network namespaces this script creates: a bridge in
# its own namespace and two hosts joined to it by veth pairs. Nothing
# outside those namespaces (and the scratch directory) is touched; all of it
# is removed on exit, whatever happens. Names are unique per run.
#
#   discovery.sh BRAID CASE
#   CASE:
#     code      `braid recv` (no address flags), `braid send FILE CODE` finds it, then
#               `braid send FILE LABEL` (the pinned peer, no code) finds it by its key
#     slash23   the same across a /23: sender 10.N.0.x/23, receiver 10.N.1.y/23
#     late      the receiver's interface comes up after it started: announced then
#     ipv6      no IPv4 at all: the receiver is found and reached at its link-local
#               IPv6 address, with the interface as its scope
#     coexist   another mDNS responder (python3-zeroconf) and a second braid receiver
#               on the receiver's host: both receivers found, the second renamed
#     browser   an independent DNS-SD browser (Debian's python3-zeroconf) sees the
#               announcement with its public fields only; with --no-announce it sees
#               nothing and `braid send FILE CODE` says nobody announces the number
#
# Exits 77 (ctest SKIP) with the reason when it cannot run here: not root,
# no iproute2, or (browser) no python3-zeroconf.
set -uo pipefail

BRAID=${1:?usage: discovery.sh BRAID CASE}
CASE=${2:?usage: discovery.sh BRAID CASE}
. "$(dirname "$0")/lib.sh"

skip() { echo "SKIPPED discovery.$CASE: $*"; echo "SKIPPED discovery.$CASE: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
[ -x "$BRAID" ] || skip "no braid binary at $BRAID"
[ "$CASE" != ipv6 ] || [ -e /proc/net/if_inet6 ] || skip "this kernel has no IPv6"
ZC_PY=/usr/bin/python3  # Debian's python, where python3-zeroconf lives (not a pyenv one)
if [ "$CASE" = browser ] || [ "$CASE" = coexist ]; then
  "$ZC_PY" -c 'import zeroconf' 2>/dev/null || skip "python3-zeroconf is not installed (scripts/install-deps.sh)"
fi

workspace "discovery-$CASE"
TAG=$(printf '%04x%02x' $(( $$ % 65536 )) $(( RANDOM % 256 )))
NB="braid-d-$TAG-br" NS="braid-d-$TAG-snd" NR="braid-d-$TAG-rcv"
NET=$(( 100 + RANDOM % 100 ))  # 10.NET.*: private, and only inside these namespaces
PIDS=()

teardown() {
  local p ns
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for ns in "$NS" "$NR" "$NB"; do
    [ -e "/run/netns/$ns" ] || continue
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  cleanup
}
trap teardown EXIT

# host NS IFNAME ADDR/PREFIX: a veth from NS into the bridge, with that address.
host() {
  ip netns exec "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 >/dev/null
  ip -n "$1" link set lo up
  ip -n "$1" link add eth0 type veth peer name "$2" netns "$NB" || fail "cannot create a veth pair"
  ip -n "$NB" link set "$2" master br0 up
  [ -n "$3" ] && ip -n "$1" addr add "$3" dev eth0
  ip -n "$1" link set eth0 up
}

lab() {  # lab SENDER_ADDR RECEIVER_ADDR (with prefixes)
  ip netns add "$NB" && ip netns add "$NS" && ip netns add "$NR" || fail "cannot create network namespaces"
  ip -n "$NB" link add br0 type bridge mcast_snooping 0 || fail "cannot create a bridge"
  ip -n "$NB" link set br0 up
  host "$NS" s0 "$1"
  host "$NR" r0 "$2"
  local i target=${2%/*}
  if [ -z "$2" ]; then  # IPv6 only: the receiver's link-local address, through the sender's eth0
    for i in $(seq 50); do
      target=$(ip -n "$NR" -6 addr show dev eth0 scope link | awk '/inet6/ { sub("/.*", "", $2); print $2; exit }')
      [ -n "$target" ] && break
      sleep 0.1
    done
    target="$target%eth0"
  fi
  for i in $(seq 50); do
    ip netns exec "$NS" ping -n -q -c 1 -W 1 "$target" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "the two namespaces cannot reach each other over the bridge"
}

# in NS CONFIG_DIR CMD...: runs braid in a namespace with that side's identity.
in_ns() { local ns=$1 cfg=$2; shift 2; ip netns exec "$ns" env XDG_CONFIG_HOME="$cfg" "$@"; }

# start_recv ARGS...: `braid recv` in the receiver's namespace, no address flags.
start_recv() {
  # Not through in_ns: a function in the background is a subshell, and $! must be braid itself.
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  ip netns exec "$NR" env XDG_CONFIG_HOME="$W/rcfg" "$BRAID" recv --dir "$W/dst" --yes "$@" \
    > "$W/recv.out" 2> "$W/recv.err" &
  RECV_PID=$!
  PIDS+=("$RECV_PID")
  local i
  for i in $(seq 100); do
    grep -q "listening on" "$W/recv.out" 2>/dev/null && return 0
    kill -0 "$RECV_PID" 2>/dev/null || fail "braid recv exited early"
    sleep 0.1
  done
  fail "braid recv did not start listening in 10 s"
}

# Words from the pairing code list (security/word_list_data.cpp on main), so
# the same codes stay valid when the words format is in.
CODE=4711-chalk-lagoon-tiara-wharf

# wait_visible NUMBER: until `braid peers --visible` in the sender's namespace
# lists a receiver with that number (up to 30 s: the receiver probes for
# 0.75 s before it announces, longer on a loaded machine), so that the send
# after it is not racing the receiver's start against its own 3 s bound.
wait_visible() {
  local i
  for i in $(seq 10); do
    in_ns "$NS" "$W/scfg" "$BRAID" peers --visible --wait 3 > "$W/peers.out" 2>&1
    grep -q "number $1" "$W/peers.out" && return 0
  done
  fail "braid peers --visible never showed a receiver with the number $1"
}

send_code_then_label() {
  random_file "$W/src/one.bin" 3000000 one
  random_file "$W/src/two.bin" 1000000 two
  start_recv --code "$CODE"
  grep -q "announced on the local network as .* with the number 4711" "$W/recv.err" || fail "recv did not say it announced 4711"
  wait_visible 4711
  grep -q "10\.$NET\.[01]\.[0-9]*:7878" "$W/peers.out" || fail "braid peers --visible does not show the receiver's address"
  in_ns "$NS" "$W/scfg" "$BRAID" send "$W/src/one.bin" "$CODE" > "$W/send1.out" 2> "$W/send1.err"
  rc=$?
  [ "$rc" -eq 0 ] || fail "braid send FILE CODE exited $rc"
  cmp "$W/src/one.bin" "$W/dst/one.bin" || fail "one.bin did not arrive identical"
  # The pinned label: what the sender's known_peers now names the receiver by.
  label=$(awk '!/^#/ && NF { print $1; exit }' "$W/scfg/braid/known_peers")
  [ -n "$label" ] || fail "the sender pinned no peer"
  in_ns "$NS" "$W/scfg" "$BRAID" send "$W/src/two.bin" "$label" > "$W/send2.out" 2> "$W/send2.err"
  rc=$?
  [ "$rc" -eq 0 ] || fail "braid send FILE $label (a pinned peer, no code) exited $rc"
  cmp "$W/src/two.bin" "$W/dst/two.bin" || fail "two.bin did not arrive identical"
  # A label nobody announces: said clearly, exit 3, within the browse bound.
  printf 'ghost SHA256:%s\n' "$(head -c 32 /dev/zero | base64 | tr -d '=\n')" >> "$W/scfg/braid/known_peers"
  in_ns "$NS" "$W/scfg" "$BRAID" send "$W/src/two.bin" ghost > "$W/send3.out" 2> "$W/send3.err"
  rc=$?
  [ "$rc" -eq 3 ] || fail "sending to an unannounced pinned peer exited $rc, not 3"
  grep -q "no braid receiver with ghost's key" "$W/send3.err" || fail "no clear message for an unannounced peer"
}

case "$CASE" in
  code)
    lab "10.$NET.0.1/24" "10.$NET.0.2/24"
    send_code_then_label
    ;;
  slash23)
    lab "10.$NET.0.7/23" "10.$NET.1.9/23"
    send_code_then_label
    ;;
  ipv6)
    lab "" ""  # no IPv4 at all: only the link-local IPv6 addresses the kernel gives
    random_file "$W/src/one.bin" 2000000 one
    start_recv --code "$CODE"
    wait_visible 4711
    in_ns "$NS" "$W/scfg" "$BRAID" send --json "$W/send.json" "$W/src/one.bin" "$CODE" > "$W/send1.out" 2> "$W/send1.err"
    rc=$?
    [ "$rc" -eq 0 ] || fail "braid send FILE CODE over link-local IPv6 exited $rc"
    cmp "$W/src/one.bin" "$W/dst/one.bin" || fail "one.bin did not arrive identical"
    # Reached at all, a link-local address was dialled with its scope (without one, connect fails: EINVAL).
    # (Reports print a link-local address with its scope: [fe80::1%eth0]:7878.)
    grep -Eq '\[fe80::[0-9a-f:]*(%[A-Za-z0-9._-]+)?\]:7878' "$W/send.json" || fail "the lanes did not go to the receiver's link-local address"
    ;;
  late)
    # The receiver starts before its network is up (a laptop before its
    # Wi-Fi): it announces once the interface comes up (rescanned every 5 s).
    lab "10.$NET.0.1/24" "10.$NET.0.2/24"
    ip -n "$NR" link set eth0 down
    random_file "$W/src/one.bin" 1000000 one
    start_recv --code "$CODE"
    grep -q "not announced" "$W/recv.err" && fail "recv gave up announcing with no interface up"
    sleep 1
    ip -n "$NR" link set eth0 up
    ip -n "$NR" addr replace "10.$NET.0.2/24" dev eth0
    wait_visible 4711
    in_ns "$NS" "$W/scfg" "$BRAID" send "$W/src/one.bin" "$CODE" > "$W/send1.out" 2> "$W/send1.err"
    rc=$?
    [ "$rc" -eq 0 ] || fail "braid send FILE CODE to a receiver whose interface came up late exited $rc"
    cmp "$W/src/one.bin" "$W/dst/one.bin" || fail "one.bin did not arrive identical"
    ;;
  coexist)
    # Another mDNS responder (python3-zeroconf, as avahi would be) and a
    # second braid receiver on the receiver's host: port 5353 is shared,
    # the second receiver (same host name) is renamed, both are found.
    lab "10.$NET.0.1/24" "10.$NET.0.2/24"
    cat > "$W/other.py" <<'EOF2'
import socket, sys, time
from zeroconf import ServiceInfo, Zeroconf, IPVersion
zc = Zeroconf(ip_version=IPVersion.V4Only)
zc.register_service(ServiceInfo("_http._tcp.local.", "other._http._tcp.local.", port=80,
                                addresses=[socket.inet_aton(sys.argv[1])], server="other.local."))
print("registered", flush=True)
time.sleep(600)
EOF2
    ip netns exec "$NR" "$ZC_PY" "$W/other.py" "10.$NET.0.2" > "$W/other.out" 2> "$W/other.err" &
    OTHER_PID=$!
    PIDS+=("$OTHER_PID")
    for _ in $(seq 100); do grep -q registered "$W/other.out" 2>/dev/null && break; sleep 0.1; done
    grep -q registered "$W/other.out" || fail "the other mDNS responder did not start"
    start_recv --code "$CODE"
    mkdir -p "$W/dst2" "$W/rcfg2"
    ip netns exec "$NR" env XDG_CONFIG_HOME="$W/rcfg2" "$BRAID" recv --dir "$W/dst2" --yes --listen '[::]:7879' \
      --code 4712-apple-stone-cloud-anvil > "$W/recv2.out" 2> "$W/recv2.err" &
    PIDS+=($!)
    wait_visible 4711
    wait_visible 4712
    grep -q "number 4712 .*:7879" "$W/peers.out" || fail "the second receiver is not listed with its port: $(cat "$W/peers.out")"
    [ "$(grep -c "number 471[12]" "$W/peers.out")" -eq 2 ] || fail "not both receivers listed: $(cat "$W/peers.out")"
    grep -q " (2)  number" "$W/peers.out" || fail "the second receiver with the same name was not renamed: $(cat "$W/peers.out")"
    kill -0 "$OTHER_PID" 2>/dev/null || fail "the other mDNS responder died"
    random_file "$W/src/one.bin" 1000000 one
    in_ns "$NS" "$W/scfg" "$BRAID" send "$W/src/one.bin" 4712-apple-stone-cloud-anvil > "$W/send1.out" 2> "$W/send1.err"
    rc=$?
    [ "$rc" -eq 0 ] || fail "braid send FILE 4712-… to the second receiver exited $rc"
    cmp "$W/src/one.bin" "$W/dst2/one.bin" || fail "one.bin did not arrive identical at the second receiver"
    [ ! -e "$W/dst/one.bin" ] || fail "the file went to the receiver announcing 4711"
    cat "$W/peers.out"
    ;;
  browser)
    lab "10.$NET.0.1/24" "10.$NET.0.2/24"
    cat > "$W/browse.py" <<'EOF'
import sys, time
from zeroconf import ServiceBrowser, ServiceListener, Zeroconf, IPVersion
seen = {}
class Listener(ServiceListener):
    def add_service(self, zc, type_, name):
        seen[name] = None
    def update_service(self, zc, type_, name):
        seen[name] = None
    def remove_service(self, zc, type_, name):
        seen.pop(name, None)
zc = Zeroconf(ip_version=IPVersion.V4Only)
ServiceBrowser(zc, "_braid._tcp.local.", Listener())
deadline = time.time() + float(sys.argv[1])
while time.time() < deadline and not seen:
    time.sleep(0.1)
for name in list(seen):
    info = zc.get_service_info("_braid._tcp.local.", name, timeout=3000)
    if info is None:
        print("NAME", name, "UNRESOLVED")
        continue
    props = {k.decode(): (v or b"").decode() for k, v in info.properties.items()}
    print("NAME", name)
    print("PORT", info.port)
    print("ADDRS", " ".join(info.parsed_addresses()))
    for k, v in sorted(props.items()):
        print("TXT", k + "=" + v)
zc.close()
EOF
    start_recv --code "$CODE"
    ip netns exec "$NS" "$ZC_PY" "$W/browse.py" 10 > "$W/zc1.out" 2> "$W/zc1.err" || fail "the zeroconf browser failed"
    grep -q "^NAME .*\._braid\._tcp\.local\.$" "$W/zc1.out" || fail "python3-zeroconf did not see _braid._tcp"
    grep -qx "PORT 7878" "$W/zc1.out" || fail "the SRV record does not carry port 7878"
    grep -q "^ADDRS.*10\.$NET\.0\.2" "$W/zc1.out" || fail "the receiver's address is not announced"
    grep -qx "TXT n=4711" "$W/zc1.out" || fail "TXT lacks the code's public number"
    grep -qx "TXT v=1" "$W/zc1.out" || fail "TXT lacks the version"
    grep -q "^TXT fp=SHA256:" "$W/zc1.out" || fail "TXT lacks the key fingerprint"
    # Nothing secret: none of the code's words, in any record the browser saw.
    for w in chalk lagoon tiara wharf; do grep -qi "$w" "$W/zc1.out" && fail "the announcement shows the secret word '$w'"; done
    [ "$(grep -c '^TXT' "$W/zc1.out")" -eq 3 ] || fail "TXT carries more than v, n and fp"
    kill "$RECV_PID"; wait "$RECV_PID" 2>/dev/null; RECV_PID=
    # --no-announce: nothing to see, and braid send says so clearly.
    start_recv --code "$CODE" --no-announce
    grep -q "announced" "$W/recv.err" && fail "recv --no-announce still announced"
    ip netns exec "$NS" "$ZC_PY" "$W/browse.py" 4 > "$W/zc2.out" 2> "$W/zc2.err" || fail "the zeroconf browser failed"
    [ ! -s "$W/zc2.out" ] || fail "the browser saw a receiver started with --no-announce: $(cat "$W/zc2.out")"
    random_file "$W/src/one.bin" 100000 one
    in_ns "$NS" "$W/scfg" "$BRAID" send "$W/src/one.bin" "$CODE" > "$W/send.out" 2> "$W/send.err"
    rc=$?
    [ "$rc" -eq 3 ] || fail "send to a hidden receiver exited $rc, not 3"
    grep -q "no braid receiver announcing 4711 seen on the local network in 3 s" "$W/send.err" ||
      fail "no clear message when nobody announces the number"
    ;;
  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
