#!/usr/bin/env bash
# braid across the netlab: one ctest per case, each file must arrive identical (SHA-256).
#
#   braid_lab_test.sh CASE BRAID_BINARY NETLAB_EMU_BINARY
#   CASE: seed | outage | rate-drop | loss
#
# Correctness only (transfer completes, exit 0, file identical, every link got
# a lane in the report); speed belongs to bench/netlab. Exits 77 with the
# reason on stdout and stderr when the lab cannot run here: not root, no
# /dev/net/tun, no netlab-emu, no braid, or a braid without `send`.
set -uo pipefail

case_name=${1:?usage: braid_lab_test.sh CASE BRAID NETLAB_EMU}
braid=${2:?braid binary}
emu=${3:?netlab-emu binary}
here=$(cd "$(dirname "$0")" && pwd)
netlab="$here/../../../tools/netlab/netlab"

skip() { echo "SKIPPED netlab.integration.$case_name: $*"; echo "SKIPPED netlab.integration.$case_name: $*" >&2; exit 77; }
fail() {
  echo "FAIL netlab.integration.$case_name: $*" >&2
  if [ -n "${work:-}" ] && [ -d "$work" ]; then  # keep the logs for whoever debugs it
    keep="${TMPDIR:-/tmp}/netlab-it-failed-$case_name-$(date +%Y%m%d-%H%M%S)"
    mkdir -p "$keep" && cp "$work"/*.out "$work"/*.log "$work"/*.json "$keep"/ 2>/dev/null
    echo "logs kept in $keep" >&2
    [ -f "$work/send.log" ] && { echo "--- last lines of the sender's log ---" >&2; tail -15 "$work/send.log" >&2; }
  fi
  exit 1
}
say() { echo "[$(date +%T)] $*"; }
# grep -q reading a pipe under pipefail: the producer may die of SIGPIPE after
# the match, which reads as none (tests/integration/lib.sh says more).
grep_q() { grep "$@" >/dev/null; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces and TUN devices)"
[ -e /dev/net/tun ] || skip "/dev/net/tun is missing (no TUN support here)"
[ -x "$netlab" ] || skip "the netlab script is missing at $netlab"
[ -x "$emu" ] || skip "the netlab-emu binary is missing at $emu (build target netlab-emu)"
[ -x "$braid" ] || skip "the braid binary is missing at $braid (build target braid)"
"$braid" send --help 2>&1 | grep_q -- "--lane" || skip "this braid binary has no working 'braid send' yet"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
command -v sha256sum >/dev/null || skip "sha256sum is not installed"
command -v python3 >/dev/null || skip "python3 is not installed"

export NETLAB_EMU=$emu
export NETLAB_PREFIX="it$$"
work=$(mktemp -d "${TMPDIR:-/tmp}/netlab-it-$case_name.XXXXXX")
recv_pid=""
cleanup() {
  [ -n "$recv_pid" ] && kill "$recv_pid" 2>/dev/null
  "$netlab" down >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port=7878
code="braid-netlab-integration-code"
events=()   # "SECONDS_AFTER_SEND_STARTS SPEC", applied with `netlab event`
expect=""   # what the lab's counters must show happened: "LINK drops CAUSE" or "LINK rate BPS"
mid_at=""   # take a counter snapshot this many seconds after the send starts (to see a lane come back)
size_mib=48
case "$case_name" in
  seed)      # the seed's lanes: USB-like, 5 GHz Wi-Fi-like, Bluetooth-like
    links=('U:rate=160Mbit,delay=1ms,queue=80KB' 'W:rate=320Mbit,delay=3ms,queue=480KB'
           'B:rate=1.5Mbit,delay=20ms,queue=48KB')
    must_carry=(U W) ;;
  outage)    # lane D goes dark for 3 s mid-transfer, then comes back
    links=('A:rate=40Mbit,delay=5ms,queue=100KB' 'D:rate=40Mbit,delay=5ms,queue=100KB')
    events=("2 link=D,outage=3s")
    expect="D drops outage" mid_at=5.2
    size_mib=40
    must_carry=(A D) ;;
  rate-drop) # lane R drops from 60 to 6 Mbit/s mid-transfer
    links=('A:rate=40Mbit,delay=5ms,queue=100KB' 'R:rate=60Mbit,delay=5ms,queue=150KB')
    events=("1.5 link=R,rate=6Mbit")
    expect="R rate 6000000"
    size_mib=40
    must_carry=(A R) ;;
  loss)      # lane L loses 1 % of packets each way
    links=('L:rate=60Mbit,delay=5ms,loss=1%,queue=150KB' 'C:rate=30Mbit,delay=5ms,queue=100KB')
    size_mib=32
    expect="L drops loss"
    must_carry=(C) ;;
  *) fail "unknown case '$case_name' (seed, outage, rate-drop, loss)" ;;
esac

up_args=()
for l in "${links[@]}"; do up_args+=(--link "$l"); done
say "netlab up ${up_args[*]}"
"$netlab" up "${up_args[@]}" >"$work/up.out" 2>&1 || { cat "$work/up.out" >&2; fail "netlab up failed"; }

mkdir -p "$work/src" "$work/dst"
head -c "${size_mib}M" /dev/urandom >"$work/src/payload.bin" || fail "cannot make the payload"
want=$(sha256sum <"$work/src/payload.bin" | cut -d' ' -f1)

listen=() lanes=()
for i in $(seq ${#links[@]}); do
  listen+=(--listen "10.77.$i.2:$port")
  lanes+=(--lane "10.77.$i.1=10.77.$i.2:$port")
done

"$netlab" exec rcv env XDG_CONFIG_HOME="$work/cfg-recv" "$braid" recv --dir "$work/dst" "${listen[@]}" \
  --code "$code" --yes --once --json "$work/recv.json" --log "$work/recv.log" >"$work/recv.out" 2>&1 &
recv_pid=$!
for _ in $(seq 50); do
  "$netlab" exec rcv ss -ltn 2>/dev/null | grep_q "10.77.1.2:$port" && break
  sleep 0.1
done

"$netlab" stats --json >"$work/stats-before.json" || fail "netlab stats failed"
say "braid send ${size_mib} MiB over ${#links[@]} lanes"
start=$(date +%s.%N)
timeout 120 "$netlab" exec snd env XDG_CONFIG_HOME="$work/cfg-send" "$braid" send --code "$code" "${lanes[@]}" \
  --json "$work/send.json" --log "$work/send.log" "$work/src/payload.bin" "10.77.1.2:$port" \
  >"$work/send.out" 2>&1 &
send_pid=$!
wait_until() {  # wait_until SECONDS: until that long after the send started, or the send ended
  while :; do
    awk -v a="$start" -v b="$(date +%s.%N)" -v t="$1" 'BEGIN { exit !(b - a >= t) }' && return 0
    kill -0 "$send_pid" 2>/dev/null || return 1
    sleep 0.05
  done
}
for e in "${events[@]}"; do
  at=${e%% *} spec=${e#* }
  wait_until "$at" || fail "the transfer ended before the event '$spec' at ${at}s: make it longer"
  say "netlab event $spec"
  "$netlab" event "$spec" || fail "netlab event '$spec' failed"
done
cp "$work/stats-before.json" "$work/stats-mid.json"
if [ -n "$mid_at" ] && wait_until "$mid_at"; then
  "$netlab" stats --json >"$work/stats-mid.json" || fail "netlab stats failed"
  say "counter snapshot at ${mid_at}s (after the outage)"
fi
wait "$send_pid"
send_rc=$?
end=$(date +%s.%N)
for _ in $(seq 100); do kill -0 "$recv_pid" 2>/dev/null || break; sleep 0.1; done
wait "$recv_pid" 2>/dev/null
recv_rc=$?
recv_pid=""
"$netlab" stats --json >"$work/stats-after.json" || fail "netlab stats failed"

echo "--- braid send (exit $send_rc) ---"; cat "$work/send.out"
echo "--- braid recv (exit $recv_rc) ---"; cat "$work/recv.out"
[ "$send_rc" -ne 124 ] || fail "braid send hung: killed after 120 s (the transfer needs ~10 s)"
[ "$send_rc" -eq 0 ] || fail "braid send exited $send_rc"
[ "$recv_rc" -eq 0 ] || fail "braid recv exited $recv_rc"
[ -f "$work/dst/payload.bin" ] || fail "the file did not arrive"
got=$(sha256sum <"$work/dst/payload.bin" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the file differs: SHA-256 $got, sent $want"
say "SHA-256 identical ($want), $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"

# The report and the lab's own counters: every link got a lane, and the links in
# must_carry really carried the data (what crossed each link, from the emulator).
python3 - "$work" "${#links[@]}" "$expect" "${must_carry[@]}" <<'EOF' || fail "report or link counters wrong (see above)"
import json, sys
work, nlinks, expect, must = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
mid = json.load(open(f"{work}/stats-mid.json"))
rep = json.load(open(f"{work}/send.json"))
a, b = json.load(open(f"{work}/stats-before.json")), json.load(open(f"{work}/stats-after.json"))
ok = True
if not rep.get("all_verified", rep.get("verified")):
    print("report: not every file verified:", rep.get("message")); ok = False
size = rep.get("bytes", 0)
print(f"report: {size} bytes in {rep.get('seconds', 0):.2f} s, stalls {rep.get('stalls')}, "
      f"duplicates {rep.get('duplicates')}, abandoned {rep.get('abandoned')}")
for i in range(1, nlinks + 1):
    lanes = [l for l in rep.get("lanes", []) if str(l.get("local", "")).startswith(f"10.77.{i}.1:")]
    la, lb = a["links"][i - 1], b["links"][i - 1]
    crossed = lb["up"]["tx_bytes"] - la["up"]["tx_bytes"]
    drops = {k: lb["up"]["drops"][k] - la["up"]["drops"][k] for k in lb["up"]["drops"]}
    name = lb["name"]
    print(f"link {name}: {len(lanes)} lane(s) in the report carrying "
          f"{sum(l.get('bytes', 0) for l in lanes)} bytes; {crossed} IP bytes crossed; drops {drops}; "
          + "; ".join(f"lane {l.get('lane_id')} {'open' if l.get('open_at_end') else 'closed: ' + str(l.get('close_reason'))}"
                      for l in lanes))
    if not lanes:
        print(f"  FAIL: no lane on link {name}"); ok = False
    # The report tells the truth (MISSION.md: the seed reported 550-650 Mbit/s
    # on a 370 Mbit/s link). What crossed the link — IP bytes less TCP/IP
    # headers (52 of every 1500) — is what the lanes say they wrote, within
    # 5 %; they never claim more delivered than crossed (pieces abandoned
    # mid-way crossed without an ack); no lane claims a rate above its link's
    # (first) setting.
    acked = sum(l.get("acked_bytes", 0) for l in lanes)
    wrote = sum(l.get("wire_bytes", 0) for l in lanes)
    payload = crossed * 1448 / 1500
    if abs(payload - wrote) > 0.05 * wrote + (256 << 10):
        print(f"  FAIL: lanes on {name} report {wrote} bytes written, the link carried ~{payload:.0f} of payload")
        ok = False
    if acked > 1.05 * payload + (256 << 10):
        print(f"  FAIL: lanes on {name} report {acked} bytes delivered, the link carried only ~{payload:.0f}")
        ok = False
    link_bps = la["up"]["settings"]["rate_bps"]
    for l in lanes:
        rate = l.get("rate_bytes_per_sec", 0) * 8
        if rate > 1.05 * link_bps:
            print(f"  FAIL: lane {l.get('lane_id')} reports {rate / 1e6:.1f} Mbit/s on a {link_bps / 1e6:.1f} Mbit/s link")
            ok = False
        if l.get("active_seconds", 0) > rep.get("seconds", 0) + 0.05:
            print(f"  FAIL: lane {l.get('lane_id')} was active {l.get('active_seconds')} s of a {rep.get('seconds')} s transfer")
            ok = False
    print(f"  truth: {wrote} bytes written, {acked} delivered, ~{payload:.0f} payload on the wire ("
          + ", ".join(f"lane {l.get('lane_id')} {l.get('rate_bytes_per_sec', 0) * 8 / 1e6:.1f} Mbit/s over {l.get('active_seconds', 0):.2f} s"
                      for l in lanes) + f"; link {link_bps / 1e6:.1f} Mbit/s)")
    if name in must and crossed < size * 0.05:
        print(f"  FAIL: link {name} carried under 5 % of the file"); ok = False
    after_mid = lb["up"]["tx_bytes"] - mid["links"][i - 1]["up"]["tx_bytes"]
    if mid is not a and expect and expect[0] == name and expect[2] == "outage":
        print(f"  {after_mid} IP bytes crossed link {name} after the outage ended (information, not a check)")
    if expect and expect[0] == name:
        if expect[1] == "drops" and drops.get(expect[2], 0) <= 0:
            print(f"  FAIL: the lab shows no '{expect[2]}' drops on link {name}: the event did not hit the transfer")
            ok = False
        if expect[1] == "rate" and abs(lb["up"]["settings"]["rate_bps"] - float(expect[2])) > 1:
            print(f"  FAIL: link {name} is at {lb['up']['settings']['rate_bps']} bit/s, not {expect[2]}"); ok = False
sys.exit(0 if ok else 1)
EOF
echo "PASS netlab.integration.$case_name"
