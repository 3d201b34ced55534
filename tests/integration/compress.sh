#!/usr/bin/env bash
# Per-frame compression through the real `braid` binary over loopback
# (docs/engine.md, "Compression"). One case per run: compress.sh BRAID CASE.
# Figures come from the reports, never from time.
#   text      --compress always: 32 MiB of log lines arrive identical; the frames crossed
#             compressed (compressed_file_bytes is the whole file, plus
#             any end-of-transfer duplicate), the
#             lanes' wire bytes are under 40 % of the file; --no-compress
#             sends none compressed and more than the file
#   random    32 MiB of random bytes: no frame compressed, wire bytes within
#             1 % of the file (what sealing adds), identical
#   mixed     --compress always: a file of text and random 1 MiB blocks,
#             with --sync after one changed block: identical, only text
#             frames compressed
#   auto      the default (--compress auto) on the same log: over a lane
#             capped at 100 Mbit/s (slower than zstd) most frames cross
#             compressed; on bare loopback (faster than zstd: the governor
#             sends most frames raw, by timing, so not asserted) never more
#             bytes than the file takes
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace compress
MiB=$((1 << 20))
PAIR_CODE=compress$CODE_SUFFIX
run() { pair_run "$@"; }
json() { report_check "$@"; }

log_lines() {  # log_lines PATH BYTES SEED
  python3 - "$1" "$2" "$3" <<'PY'
import random, sys
random.seed(sys.argv[3])
out, size, want = [], 0, int(sys.argv[2])
while size < want:
    l = f"2026-12-03T{random.randint(0, 23):02d}:{random.randint(0, 59):02d} INFO worker-{random.randint(0, 9)} req={random.getrandbits(32):08x} GET /api/items/{random.randint(1, 9999)} 200 took={random.randint(1, 400)}ms\n"
    out.append(l); size += len(l)
open(sys.argv[1], 'w').write(''.join(out)[:want])
PY
}

case "$CASE" in
  text)
    log_lines "$W/src/app.log" $((32 * MiB)) 1
    run --compress always "$W/src/app.log"
    cmp "$W/src/app.log" "$W/dst/app.log" || fail "the log arrived different"
    # An end-of-transfer duplicate (another lane sending a last piece again) crosses too.
    json "32 * $MiB <= s['compressed_file_bytes'] <= (32 + s['duplicates'] + s['abandoned']) * $MiB" \
      "s['compressed_wire_bytes'] < 0.4 * s['compressed_file_bytes']" \
      "s['wire_bytes'] < 0.4 * 32 * $MiB" "sum(l['bytes'] for l in s['lanes']) == 32 * $MiB" "s['sent_bytes'] == 32 * $MiB"
    echo "text: $(python3 -c "import json; j = json.load(open('$W/send.json')); print(j['compressed_file_bytes'], 'file bytes as', j['compressed_wire_bytes'], 'compressed,', j['wire_bytes'], 'on the wire')")"
    run --no-compress "$W/src/app.log"
    cmp "$W/src/app.log" "$W/dst/app.log" || fail "the log arrived different (--no-compress)"
    json "s['compressed_file_bytes'] == 0" "s['wire_bytes'] > 32 * $MiB"
    ;;
  random)
    random_file "$W/src/noise.bin" $((32 * MiB)) noise
    run "$W/src/noise.bin"
    cmp "$W/src/noise.bin" "$W/dst/noise.bin" || fail "the file arrived different"
    json "s['compressed_file_bytes'] == 0" "32 * $MiB < s['wire_bytes'] < 1.01 * (32 + s['duplicates'] + s['abandoned']) * $MiB"
    ;;
  mixed)
    log_lines "$W/text" $((8 * MiB)) 2
    random_file "$W/noise" $((8 * MiB)) mixed
    for i in 0 1 2 3 4 5 6 7; do
      dd if="$W/text" bs=1M skip=$i count=1 status=none; dd if="$W/noise" bs=1M skip=$i count=1 status=none
    done > "$W/src/mixed.bin"
    run --compress always --sync "$W/src/mixed.bin"
    cmp "$W/src/mixed.bin" "$W/dst/mixed.bin" || fail "the file arrived different"
    json "8 * $MiB <= s['compressed_file_bytes'] <= (8 + s['duplicates'] + s['abandoned']) * $MiB"
    log_lines "$W/piece" $MiB 3
    dd if="$W/piece" of="$W/src/mixed.bin" bs=1M seek=4 conv=notrunc status=none
    run --compress always --sync "$W/src/mixed.bin"
    cmp "$W/src/mixed.bin" "$W/dst/mixed.bin" || fail "the synced file differs"
    json "s['sent_bytes'] == $MiB" "$MiB <= s['compressed_file_bytes'] <= (1 + s['duplicates'] + s['abandoned']) * $MiB"
    ;;
  auto)
    log_lines "$W/src/app.log" $((32 * MiB)) 4
    run --rate-limit 100Mbit/s "$W/src/app.log"
    cmp "$W/src/app.log" "$W/dst/app.log" || fail "the log arrived different (capped)"
    echo "auto, 100 Mbit/s: $(python3 -c "import json; j = json.load(open('$W/send.json')); print(j['compressed_file_bytes'], 'of', j['bytes'], 'compressed;', j['wire_bytes'], 'on the wire')")"
    json "s['compressed_file_bytes'] > 0.5 * 32 * $MiB" "s['wire_bytes'] < 0.6 * 32 * $MiB"
    run "$W/src/app.log"
    cmp "$W/src/app.log" "$W/dst/app.log" || fail "the log arrived different (loopback)"
    echo "auto, loopback: $(python3 -c "import json; j = json.load(open('$W/send.json')); print(j['compressed_file_bytes'], 'of', j['bytes'], 'compressed;', j['wire_bytes'], 'on the wire')")"
    json "s['wire_bytes'] < 1.01 * (32 + s['duplicates'] + s['abandoned']) * $MiB"
    ;;
  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS [$CASE]"
