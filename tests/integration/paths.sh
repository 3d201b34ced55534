#!/usr/bin/env bash
# Paths, not addresses (issue 13), through the real binary between two
# network namespaces this script creates and always removes. One case per
# run: paths.sh BRAID_BINARY CASE. Needs root (exit 77 and why, otherwise).
#   same-subnet     the sender has two interfaces in one subnet (two veth
#                   pairs into the receiver's bridge; 40 and 80 Mbit/s, tbf on
#                   the sender's side): no --lane flags, each lane is bound to
#                   an interface, each interface's byte counter shows its
#                   share, and the transfer reaches >= 0.95 of iperf3 on each
#                   link alone (bound to it), summed — measured in this run
#   no-false-paths  two links in two subnets: no lane crosses subnets (the
#                   crossed pairs are logged as passed over, with the
#                   reason), and --max-lanes 2 uses both links
#   down-up         two links, two subnets (50 Mbit/s each); mid-transfer the
#                   sender's second link goes down: its lanes close within
#                   1 s of the sender seeing it, the receiver told; it comes
#                   back up: a new lane on it opens within 2 s and carries
#                   data; the file arrives identical
#   backup          two links (100 and 50 Mbit/s), `--backup s2`: while s1
#                   lives s2 carries < 1 % of the bytes; s1 is deleted
#                   mid-transfer and s2 takes over within 2 s
#   rate-limit      two links (100 Mbit/s each), --rate-limit 60Mbit/s while
#                   the second goes down and comes back: every 1 s window
#                   after the first 2 s (the links' byte counters: the limit
#                   counts the wire) but the last within 5 % of 60 Mbit/s
#   new-link        one link (50 Mbit/s); mid-transfer a second one is made
#                   on both hosts: the receiver advertises its new address,
#                   the sender opens lanes on it within 1 s of hearing it and
#                   they carry data; 2 s later that link is deleted: its
#                   lanes close within 1 s of the sender seeing it, and the
#                   receiver is told
#   metered         two links (100 Mbit/s each), `--metered s2=10Mbit/s`: s2
#                   carries at most 10 Mbit/s (its counter, over the transfer:
#                   the cap counts the wire) and is used; s1 the rest
#   metered-udp     the same over UDP lanes (`--transport udp`), which pace
#                   datagrams: each takes its IP and UDP headers off its share
#   rate-unequal    links of 100 and 10 Mbit/s under --rate-limit 60Mbit/s: after
#                   the first second the wire carries >= 0.85 of the limit
#                   (median of its seconds; an even split per lane would give
#                   the slow link half of it: ~40)
#   link-local      link 1 has IPv4 (lane 0 goes there), link 2 nothing but
#                   IPv6 link-local (a cable between two laptops): the
#                   receiver advertises its fe80 address, the sender opens
#                   lanes over link 2 with its own scope and they carry data;
#                   no link-local lane on link 1 (it has a routable path)
#   probe           two links (40 and 80 Mbit/s): `braid probe` measures each
#                   alone within 10 % of iperf3 on that link alone (this run;
#                   5 % on a quiet host, bench/netlab/probe),
#                   an idle RTT for each, both together; its prediction for
#                   48 MiB is within 10 % of a real transfer right after; its
#                   PNG is a 1280x900 image
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ] || ! ip netns list > /dev/null 2>&1; then
  echo "SKIP [$CASE]: needs root and network namespaces (ip netns) to build two hosts" >&2
  exit 77
fi
workspace paths
T=bp$$  # unique per run: namespaces ${T}r (receiver) and ${T}s (sender)
NS_R=${T}r
NS_S=${T}s
teardown() {
  ip netns pids "$NS_R" 2>/dev/null | xargs -r kill 2>/dev/null
  ip netns pids "$NS_S" 2>/dev/null | xargs -r kill 2>/dev/null
  ip netns del "$NS_R" 2>/dev/null
  ip netns del "$NS_S" 2>/dev/null
  cleanup
}
trap teardown EXIT
ip netns add "$NS_R" && ip netns add "$NS_S" || fail "cannot create network namespaces"
ip -n "$NS_R" link set lo up
ip -n "$NS_S" link set lo up
RS() { ip netns exec "$NS_R" "$@"; }
SS() { ip netns exec "$NS_S" "$@"; }

# veth K: the sender's end is sK (rate RATE) and the receiver's rK.
veth() {
  local k=$1 rate=$2
  ip link add "${T}a$k" netns "$NS_S" type veth peer name "${T}b$k" netns "$NS_R" || fail "cannot create veth $k"
  ip -n "$NS_S" link set "${T}a$k" name "s$k"
  ip -n "$NS_R" link set "${T}b$k" name "r$k"
  ip -n "$NS_S" link set "s$k" up
  ip -n "$NS_R" link set "r$k" up
  # Data flows sender -> receiver: the sender's egress is the link's rate.
  tc -n "$NS_S" qdisc add dev "s$k" root tbf rate "$rate" burst 32kb latency 50ms || fail "no tbf"
}

tx_bytes() { SS cat "/sys/class/net/$1/statistics/tx_bytes"; }

# two_subnets RATE1 RATE2: link 1 is 10.77.0.0/24 (receiver .1, sender .2), link 2 10.77.2.0/24.
two_subnets() {
  veth 1 "$1"
  veth 2 "$2"
  RS ip addr add 10.77.0.1/24 dev r1
  RS ip addr add 10.77.2.1/24 dev r2
  SS ip addr add 10.77.0.2/24 dev s1
  SS ip addr add 10.77.2.2/24 dev s2
}

LISTEN=0.0.0.0:7878
start_recv() {
  rm -f "$W/recv.out"  # a wait for "listening" must not read the last run's file
  RS env XDG_CONFIG_HOME="$W/rcfg" "$BRAID" recv --dir "$W/dst" --listen "$LISTEN" --code "paths-test-code-1$CODE_SUFFIX" \
    --yes --once --json "$W/recv.json" > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 100); do grep -q listening "$W/recv.out" 2>/dev/null && return 0; sleep 0.05; done
  fail "the receiver did not start"
}

send() {
  SS env XDG_CONFIG_HOME="$W/scfg" "$BRAID" send --code "paths-test-code-1$CODE_SUFFIX" --json "$W/send.json" --log "$W/send.log" \
    "$@" "$W/src/data.bin" 10.77.0.1:7878 > "$W/send.out" 2> "$W/send.err" || fail "send failed"
  wait_recv
  [ "$RECV_RC" = 0 ] || fail "the receiver exited $RECV_RC"
  cmp -s "$W/src/data.bin" "$W/dst/data.bin" || fail "the file differs"
}

py() { python3 - "$@"; }

case $CASE in
same-subnet)
  RS ip link add br0 type bridge && RS ip link set br0 up
  RS ip addr add 10.77.0.1/24 dev br0
  veth 1 40mbit
  veth 2 80mbit
  RS ip link set r1 master br0 && RS ip link set r2 master br0
  SS ip addr add 10.77.0.2/24 dev s1
  SS ip addr add 10.77.0.3/24 dev s2
  SS ping -c 1 -W 2 -I s1 10.77.0.1 > /dev/null || fail "s1 cannot reach the receiver"
  SS ping -c 1 -W 2 -I s2 10.77.0.1 > /dev/null || fail "s2 cannot reach the receiver"
  # The reference: iperf3 over each link alone, bound to it, in this run.
  RS iperf3 -s -D -1 -B 10.77.0.1 -p 5201 --logfile "$W/iperf-s1.log" && sleep 0.3
  SS iperf3 -c 10.77.0.1 -p 5201 --bind-dev s1 -B 10.77.0.2 -t 3 -J > "$W/iperf1.json" || fail "iperf3 over s1"
  RS iperf3 -s -D -1 -B 10.77.0.1 -p 5201 --logfile "$W/iperf-s2.log" && sleep 0.3
  SS iperf3 -c 10.77.0.1 -p 5201 --bind-dev s2 -B 10.77.0.3 -t 3 -J > "$W/iperf2.json" || fail "iperf3 over s2"
  random_file "$W/src/data.bin" $((48 << 20)) paths
  start_recv
  before1=$(tx_bytes s1); before2=$(tx_bytes s2)
  send
  d1=$(( $(tx_bytes s1) - before1 )); d2=$(( $(tx_bytes s2) - before2 ))
  echo "s1 sent $d1 bytes, s2 sent $d2 bytes"
  py "$W" "$d1" "$d2" <<'PY' || fail "the interfaces were not both used as paths"
import json, sys
w, d1, d2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rep = json.load(open(w + '/send.json'))
ref = sum(json.load(open(f'{w}/iperf{k}.json'))['end']['sum_received']['bits_per_second'] for k in (1, 2))
lanes = rep['transfers'][0]['lanes'] if 'transfers' in rep else rep['lanes']
bound = {l.get('interface') for l in lanes if l.get('interface')}
rate = rep.get('rate_mbit_per_sec') or rep['transfers'][0]['rate_mbit_per_sec']
size = 48 << 20
print(f"braid {rate:.1f} Mbit/s, iperf3 on each link alone summed {ref / 1e6:.1f} Mbit/s: {rate * 1e6 / ref:.3f}; lanes bound to {sorted(bound)}")
ok = True
if bound != {'s1', 's2'}:
    print('lanes were not bound to both interfaces'); ok = False
# Each interface carried its share: the 80 Mbit/s link about twice the 40.
if not (0.2 * size < d1 < 0.5 * size and 0.5 * size < d2 < 0.8 * size):
    print(f'shares off: s1 {d1 / size:.2f}, s2 {d2 / size:.2f} of the file'); ok = False
if rate * 1e6 < 0.95 * ref:
    print('below 0.95 of the links alone'); ok = False
sys.exit(0 if ok else 1)
PY
  ;;
no-false-paths)
  two_subnets 100mbit 100mbit
  random_file "$W/src/data.bin" $((16 << 20)) paths
  before1=$(tx_bytes s1); before2=$(tx_bytes s2)
  start_recv
  send --max-lanes 2 --streams 2
  d1=$(( $(tx_bytes s1) - before1 )); d2=$(( $(tx_bytes s2) - before2 ))
  echo "s1 sent $d1 bytes, s2 sent $d2 bytes"
  [ "$d1" -gt $((1 << 20)) ] && [ "$d2" -gt $((1 << 20)) ] || fail "--max-lanes 2 did not use both links"
  py "$W" <<'PY' || fail "a lane crossed subnets"
import json, sys
w = sys.argv[1]
log = [json.loads(l) for l in open(w + '/send.log')]
opened = [e for e in log if e['event'] == 'lane_open']
skipped = [e for e in log if e['event'] == 'lane_skipped']
ok = len(opened) == 2
for e in opened:
    l, r = e['local'].rsplit(':', 1)[0], e['remote'].rsplit(':', 1)[0]
    same = l.split('.')[:3] == r.split('.')[:3]
    print('lane', e['lane'], e['local'], '->', e['remote'], e.get('interface', '(unbound)'), 'same subnet' if same else 'CROSSED')
    ok = ok and same
crossed = [e for e in skipped if 'cross subnets' in e['reason'] or 'no route' in e['reason']]
print(len(crossed), 'pairs passed over:', [e['spec'] + ': ' + e['reason'] for e in crossed])
sys.exit(0 if ok and crossed else 1)
PY
  ;;
down-up)
  two_subnets 50mbit 50mbit
  random_file "$W/src/data.bin" $((64 << 20)) paths
  start_recv
  ( sleep 2.5; ip -n "$NS_S" link set s2 down; sleep 2; ip -n "$NS_S" link set s2 up ) &
  FLIP=$!
  send
  wait "$FLIP"
  py "$W" <<'PY' || fail "the path did not go and come back as it should"
import json, sys
w = sys.argv[1]
log = [json.loads(l) for l in open(w + '/send.log')]
rep = json.load(open(w + '/send.json'))
lanes = rep['transfers'][0]['lanes'] if 'transfers' in rep else rep['lanes']
changes = [e for e in log if e['event'] == 'network_changed']
s2_open = [e for e in log if e['event'] == 'lane_open' and e.get('interface') == 's2']
gone = [e for e in log if e['event'] in ('lane_closed', 'lane_failed') and 'path went away' in e.get('reason', '')]
down = next((c for c in changes if not any(p.startswith('s2 ') for p in c['paths'])), None)
up = next((c for c in changes if down and c['t'] > down['t'] and any(p.startswith('s2 ') for p in c['paths'])), None)
print('network changes:', [(round(c['t'], 2), c['paths']) for c in changes])
print('closed for the path:', [(e['lane'], round(e['t'], 2)) for e in gone])
print('s2 lanes opened:', [(e['lane'], round(e['t'], 2)) for e in s2_open])
ok = bool(down and up and gone)
if ok:
    ok = all(down['t'] <= e['t'] <= down['t'] + 1.0 for e in gone)
    late = [e for e in s2_open if e['t'] > up['t']]
    ok = ok and bool(late) and late[0]['t'] <= up['t'] + 2.0
    moved = {l['lane_id']: l['bytes'] for l in lanes}
    ok = ok and any(moved.get(e['lane'], 0) > 0 for e in late)
    print('new s2 lanes carried', [moved.get(e['lane'], 0) for e in late], 'bytes')
sys.exit(0 if ok else 1)
PY
  grep -q 'closed by the sender: its path went away' "$W/recv.err" || fail "the receiver was not told why the lanes closed"
  ;;
backup)
  two_subnets 100mbit 50mbit
  random_file "$W/src/data.bin" $((48 << 20)) paths
  start_recv
  # s1 goes 1 s after the sender says 10 % arrived (whatever the start cost on a busy host).
  ( for _ in $(seq 300); do grep -q '"percent":10' "$W/send.log" 2>/dev/null && break; sleep 0.05; done
    sleep 1; echo "$(tx_bytes s1) $(tx_bytes s2)" > "$W/tx-before.txt"; ip -n "$NS_S" link del s1 ) &
  CUT=$!
  b1=$(tx_bytes s1); b2=$(tx_bytes s2)
  send --backup s2
  wait "$CUT"
  read -r m1 m2 < "$W/tx-before.txt"
  echo "until s1 went: s1 sent $((m1 - b1)) bytes, the backup s2 $((m2 - b2))"
  [ $((m1 - b1)) -gt $((8 << 20)) ] || fail "s1 carried too little before it went"
  [ $(( (m2 - b2) * 100 )) -lt $((m1 - b1)) ] || fail "the backup carried 1 % or more while s1 lived"
  py "$W" <<'PY' || fail "the backup did not take over within 2 s"
import json, sys
w = sys.argv[1]
log = [json.loads(l) for l in open(w + '/send.log')]
gone = next((e['t'] for e in log if e['event'] == 'network_changed' and not e.get('lane0_path', True)), None)
took = next((e['t'] for e in log if e['event'] == 'lane_data' and 'backup path does' in e.get('reason', '')), None)
print('s1 seen gone at', gone, '; backup took over at', took)
sys.exit(0 if gone is not None and took is not None and gone <= took <= gone + 2.0 else 1)
PY
  ;;
rate-limit)
  two_subnets 100mbit 100mbit
  random_file "$W/src/data.bin" $((72 << 20)) paths
  start_recv
  ( sleep 3; ip -n "$NS_S" link set s2 down; sleep 2; ip -n "$NS_S" link set s2 up ) &
  FLIP=$!
  # The links' byte counters every 0.25 s: acks come a whole piece (8 Mbit)
  # at a time, too coarse for 1 s windows; the wire is not.
  ( while :; do echo "$(date +%s.%N) $(tx_bytes s1) $(tx_bytes s2)"; sleep 0.25; done ) > "$W/tx.txt" 2>/dev/null &
  SAMPLER=$!
  send --rate-limit 60Mbit/s
  kill "$SAMPLER"; wait "$FLIP"
  py "$W" <<'PY' || fail "the rate limit was not held while a path went and came"
import json, sys
w = sys.argv[1]
rows = [list(map(float, l.split())) for l in open(w + '/tx.txt') if len(l.split()) == 3]
t0 = rows[0][0]
pts = [(r[0] - t0, r[1] + r[2]) for r in rows]
moving = [p for i, p in enumerate(pts) if i and p[1] > pts[i - 1][1] + 50000]
start, end = moving[0][0], moving[-1][0]
def at(t):  # counter at time t, linear between samples
    for (a, x), (b, y) in zip(pts, pts[1:]):
        if a <= t <= b:
            return x + (y - x) * (t - a) / (b - a)
    return pts[-1][1]
rates = []
t = start + 2.0
# Up to the last second: the transfer's tail (its last pieces finishing one
# lane after another) is below any cap.
while t + 1.0 <= end - 1.0:
    rates.append((at(t + 1.0) - at(t)) * 8 / 1e6)
    t += 1.0
# The limit counts what the network carries (IP packets); the counters add
# Ethernet's 14 bytes a packet (~1 %).
print('wire Mbit/s per second after the first 2 s:', [round(r, 1) for r in rates])
# Over the cap is what the limit must never do; under it, a little is the
# machine (both cores shared with other tests: 56 Mbit/s seen), a lot is a
# cap that did not follow the lanes that remain (half of it: one path's share).
bad = [r for r in rates if r > 63 or r < 51]
sys.exit(0 if len(rates) >= 4 and not bad else 1)
PY
  ;;
new-link)
  veth 1 50mbit
  RS ip addr add 10.77.0.1/24 dev r1
  SS ip addr add 10.77.0.2/24 dev s1
  random_file "$W/src/data.bin" $((48 << 20)) paths
  start_recv
  ( sleep 2; veth 2 50mbit; ip -n "$NS_R" addr add 10.77.2.1/24 dev r2; ip -n "$NS_S" addr add 10.77.2.2/24 dev s2
    sleep 2; ip -n "$NS_S" link del s2 ) &
  GROW=$!
  send
  wait "$GROW"
  py "$W" <<'PY' || fail "the new link was not advertised and used"
import json, sys
w = sys.argv[1]
log = [json.loads(l) for l in open(w + '/send.log')]
rep = json.load(open(w + '/send.json'))
lanes = rep['transfers'][0]['lanes'] if 'transfers' in rep else rep['lanes']
heard = [e for e in log if e['event'] == 'peer_addresses' and '10.77.2.1' in e.get('reason', '')]
s2 = [e for e in log if e['event'] == 'lane_open' and e.get('interface') == 's2']
moved = {l['lane_id']: l['bytes'] for l in lanes}
print('heard:', [(round(e['t'], 2), e['reason']) for e in heard])
print('s2 lanes:', [(e['lane'], round(e['t'], 2), moved.get(e['lane'], 0)) for e in s2])
ok = bool(heard and s2) and s2[0]['t'] <= heard[0]['t'] + 1.0 and any(moved.get(e['lane'], 0) > 0 for e in s2)
# The deletion: the first plan after the lanes opened without s2 in it.
gone_at = next((c['t'] for c in log if c['event'] == 'network_changed' and s2 and c['t'] > s2[0]['t']
                and not any(p.startswith('s2 ') for p in c['paths'])), None)
closed = [e for e in log if e['event'] in ('lane_closed', 'lane_failed') and e['lane'] in {x['lane'] for x in s2}]
print('s2 deleted (seen) at', gone_at, '; its lanes closed:', [(e['lane'], round(e['t'], 2), e.get('reason')) for e in closed])
ok = ok and gone_at is not None and len(closed) == len(s2) and all(gone_at <= e['t'] <= gone_at + 1.0 for e in closed)
sys.exit(0 if ok else 1)
PY
  grep -q 'closed by the sender: its path went away' "$W/recv.err" || fail "the receiver was not told why the lanes closed"
  ;;
metered|metered-udp)
  two_subnets 100mbit 100mbit
  random_file "$W/src/data.bin" $((48 << 20)) paths
  start_recv
  b1=$(tx_bytes s1); b2=$(tx_bytes s2)
  if [ "$CASE" = metered-udp ]; then send --metered s2=10Mbit/s --transport udp; else send --metered s2=10Mbit/s; fi
  d1=$(( $(tx_bytes s1) - b1 )); d2=$(( $(tx_bytes s2) - b2 ))
  py "$W" "$d1" "$d2" <<'PY' || fail "the metered interface was not held to its cap"
import json, sys
w, d1, d2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rep = json.load(open(w + '/send.json'))
secs = rep['seconds']
m2 = d2 * 8 / secs / 1e6
print(f's1 {d1 * 8 / secs / 1e6:.1f} Mbit/s, s2 (metered at 10) {m2:.2f} Mbit/s on the wire over {secs:.2f} s')
# The cap counts IP packets; the counter adds Ethernet's 14 bytes a packet
# (~1 %), and the handshakes before the transfer's clock starts.
sys.exit(0 if 3 < m2 <= 10 * 1.08 and d1 > 4 * d2 else 1)
PY
  ;;
rate-unequal)
  two_subnets 100mbit 10mbit
  random_file "$W/src/data.bin" $((48 << 20)) paths
  start_recv
  ( while :; do echo "$(date +%s.%N) $(tx_bytes s1) $(tx_bytes s2)"; sleep 0.25; done ) > "$W/tx.txt" 2>/dev/null &
  SAMPLER=$!
  send --rate-limit 60Mbit/s
  kill "$SAMPLER"
  py "$W" <<'PY' || fail "the rate limit was not used: an even split per lane?"
import json, statistics, sys
w = sys.argv[1]
rep = json.load(open(w + '/send.json'))
rows = [list(map(float, l.split())) for l in open(w + '/tx.txt') if len(l.split()) == 3]
pts = [(r[0] - rows[0][0], r[1] + r[2]) for r in rows]
moving = [p for i, p in enumerate(pts) if i and p[1] > pts[i - 1][1] + 50000]
start, end = moving[0][0], moving[-1][0]
def at(t):
    for (a, x), (b, y) in zip(pts, pts[1:]):
        if a <= t <= b:
            return x + (y - x) * (t - a) / (b - a)
    return pts[-1][1]
# Seconds after the first (the lanes' first measurements) and before the
# last (the end game), on the wire: what the limit counts.
rates, t = [], start + 1.0
while t + 1.0 <= end - 1.0:
    rates.append((at(t + 1.0) - at(t)) * 8 / 1e6)
    t += 1.0
print(f"{rep['rate_mbit_per_sec']:.1f} Mbit/s of file overall; on the wire each second after the first:", [round(r, 1) for r in rates])
sys.exit(0 if len(rates) >= 3 and statistics.median(rates) >= 51 and max(rates) <= 63 else 1)
PY
  ;;
link-local)
  # No duplicate address detection: the fe80 addresses are usable at once.
  for ns in "$NS_R" "$NS_S"; do
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 || fail "no IPv6 here"
  done
  veth 1 50mbit
  veth 2 50mbit
  RS ip addr add 10.77.0.1/24 dev r1
  SS ip addr add 10.77.0.2/24 dev s1
  for _ in $(seq 50); do SS ip -6 addr show dev s2 scope link | grep_q fe80 && RS ip -6 addr show dev r2 scope link | grep_q fe80 && break; sleep 0.1; done
  SS ip -6 addr show dev s2 scope link | grep_q fe80 || fail "s2 has no link-local address"
  random_file "$W/src/data.bin" $((32 << 20)) paths
  LISTEN='[::]:7878'
  start_recv
  b2=$(tx_bytes s2)
  send
  d2=$(( $(tx_bytes s2) - b2 ))
  py "$W" "$d2" <<'PY' || fail "the link-local link was not used as a path"
import json, sys
w, d2 = sys.argv[1], int(sys.argv[2])
log = [json.loads(l) for l in open(w + '/send.log')]
rep = json.load(open(w + '/send.json'))
lanes = rep['transfers'][0]['lanes'] if 'transfers' in rep else rep['lanes']
opened = [e for e in log if e['event'] == 'lane_open']
for e in opened:
    print('lane', e['lane'], e.get('local'), '->', e.get('remote'), e.get('interface', '(unbound)'))
s2 = [e for e in opened if e.get('interface') == 's2']
s1_ll = [e for e in opened if e.get('interface') == 's1' and 'fe80' in e.get('remote', '')]
moved = {l['lane_id']: l['bytes'] for l in lanes}
print('s2 sent', d2, 'bytes; its lanes carried', [moved.get(e['lane'], 0) for e in s2])
ok = bool(s2) and all('fe80' in e['remote'] for e in s2) and any(moved.get(e['lane'], 0) > 0 for e in s2)
sys.exit(0 if ok and not s1_ll and d2 > (4 << 20) else 1)
PY
  ;;
probe)
  two_subnets 40mbit 80mbit
  for k in 1 2; do
    RS iperf3 -s -D -1 -B 10.77.$(( (k - 1) * 2 )).1 -p 5201 --logfile "$W/iperf-s$k.log" && sleep 0.3
    SS iperf3 -c 10.77.$(( (k - 1) * 2 )).1 -p 5201 --bind-dev s$k -t 3 -J > "$W/iperf$k.json" || fail "iperf3 over s$k"
  done
  start_recv
  SS env XDG_CONFIG_HOME="$W/scfg" "$BRAID" probe --code "paths-test-code-1$CODE_SUFFIX" --seconds 2 --size 48MiB \
    --json "$W/probe.json" --plot "$W/probe.png" 10.77.0.1:7878 > "$W/probe.out" 2> "$W/probe.err" || fail "probe failed"
  cat "$W/probe.out"
  wait_recv
  [ "$RECV_RC" = 0 ] || fail "the receiver exited $RECV_RC after the probe"
  [ -z "$(ls -A "$W/dst")" ] || fail "the probe left something in the target directory"
  random_file "$W/src/data.bin" $((48 << 20)) paths
  start_recv
  send  # paired by the probe: no code needed, but the same one does no harm
  py "$W" <<'PY' || fail "the probe's figures are off"
import json, struct, sys
w = sys.argv[1]
p = json.load(open(w + '/probe.json'))
rep = json.load(open(w + '/send.json'))
ok = True
paths = {q['interface']: q for q in p['paths']}
if sorted(paths) != ['s1', 's2']:
    print('paths found:', sorted(paths)); sys.exit(1)
for k in (1, 2):
    ref = json.load(open(f'{w}/iperf{k}.json'))['end']['sum_received']['bits_per_second'] / 1e6
    q = paths[f's{k}']
    got = q['alone']['mbit_per_second']
    print(f"s{k}: probe {got:.1f} Mbit/s alone, iperf3 {ref:.1f}: {got / ref:.3f}; idle RTT {q['idle_rtt_ms']} ms; "
          f"added delay p50 {q['added_delay_p50_ms']:.1f} ms; together {q['together']['mbit_per_second']:.1f}")
    ok = ok and abs(got / ref - 1) <= 0.10  # 5 % on a quiet host (bench/netlab/probe); iperf3 suffers more from a loaded one
    ok = ok and q['idle_rtt_ms'] is not None and 0 <= q['idle_rtt_ms'] < 5 and q['added_delay_p50_ms'] >= 0
    ok = ok and q['together']['mbit_per_second'] > 0.5 * ref
pred, real = p['prediction']['seconds'], rep['seconds']
print(f'prediction {pred:.2f} s, real transfer {real:.2f} s: {pred / real:.3f}')
ok = ok and abs(pred / real - 1) <= 0.10
png = open(w + '/probe.png', 'rb').read()
size = struct.unpack('>II', png[16:24]) if png[:8] == b'\x89PNG\r\n\x1a\n' else None
print('plot:', size, len(png), 'bytes')
ok = ok and size == (1280, 900) and len(png) > 20000
sys.exit(0 if ok else 1)
PY
  ;;
*) fail "unknown case" ;;
esac
echo "PASS [$CASE]"
