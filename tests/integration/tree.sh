#!/usr/bin/env bash
# Big trees through the real `braid` binary over loopback (issue 18, docs/
# engine.md "Big trees"). One case per run: tree.sh BRAID_BINARY CASE.
#   150k   150,000 entries (149,250 files of 0–3 bytes in 750 directories
#          with long names) — an offer of ~25 MB, past what one frame holds
#          (16 MiB, protocol 5's limit) — arrive identical: names, sizes,
#          bytes, modes and mtimes; the sender's offer went in parts.
#          Tiny files on tmpfs keep it quick (~30 s on 2 busy cores).
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace tree
PAIR_CODE=tree$CODE_SUFFIX

case "$CASE" in
  150k)
    python3 - "$W/src/big" <<'PY'
import os, sys
root = sys.argv[1]
# Long names make the manifest big: ~165 bytes an entry on the wire.
for d in range(750):
    dd = os.path.join(root, f"a-directory-with-a-rather-long-name-so-that-the-manifest-grows-{d:04d}")
    os.makedirs(dd)
    for i in range(199):
        p = os.path.join(dd, f"a-file-with-a-long-name-as-photo-libraries-have-{d:04d}-{i:03d}.jpg")
        with open(p, "wb") as f:
            f.write(b"xyz"[: (d + i) % 4])
        os.utime(p, ns=(1_600_000_000_000_000_000 + i, 1_600_000_000_000_000_000 + d * 1000 + i))
PY
    n=$(find "$W/src/big" | wc -l)
    [ "$n" -eq 150001 ] || fail "made $n entries, not 150,001"
    pair_run "$W/src/big"
    diff -r "$W/src/big" "$W/dst/big" > "$W/diff.out" || fail "the tree differs: $(head -3 "$W/diff.out")"
    # Names, sizes, modes and mtimes (ns) of every entry.
    ( cd "$W/src" && find big -printf '%p %s %m %T@\n' | sort ) > "$W/src.list"
    ( cd "$W/dst" && find big -printf '%p %s %m %T@\n' | sort ) > "$W/dst.list"
    cmp -s "$W/src.list" "$W/dst.list" || fail "names, sizes, modes or mtimes differ: $(diff "$W/src.list" "$W/dst.list" | head -3)"
    [ -z "$(find "$W/dst" -name '.braid-*')" ] || fail "temporary files left in the target"
    # The offer went in parts: the receiver's log says when the last came.
    grep -q offer_complete "$W/recv.log" || fail "the receiver's log has no offer_complete (was the offer in one frame?)"
    report_check "s['files'] == 149250"
    ;;
  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "ok [$CASE]"
