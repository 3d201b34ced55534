#!/usr/bin/env python3
"""bench/tree/make_tree.py small|million ROOT N: the trees of the small-file
benches (bench/tree/run, bench/netlab/tree), one generator for both so their
figures are of the same trees.

  small    N files of 4 KiB in 100 directories (d000 … d099, f000000 …).
  million  N files of 1-16 KiB (seeded: the same sizes every time), 100 a
           directory, 100 directories a parent, three levels deep.

The bytes are slices of one random MiB: incompressible, and cheap to write.
"""
import os
import random
import sys


def small(root, n):
    per = max(1, n // 100)
    block = os.urandom(1 << 20)
    for i in range(n):
        d = os.path.join(root, f"d{i // per:03d}")
        if i % per == 0:
            os.makedirs(d, exist_ok=True)
        off = (i * 4099) % ((1 << 20) - 4096)
        with open(os.path.join(d, f"f{i:06d}"), "wb") as f:
            f.write(block[off:off + 4096])


def million(root, n):
    rng = random.Random(18)
    block = os.urandom(1 << 20)
    for i in range(n):
        d = os.path.join(root, f"a{i // 1000000:02d}", f"b{i // 10000 % 100:02d}", f"c{i // 100 % 100:02d}")
        if i % 100 == 0:
            os.makedirs(d, exist_ok=True)
        size = rng.randint(1024, 16384)
        off = rng.randrange(0, (1 << 20) - size)
        with open(os.path.join(d, f"f{i:07d}"), "wb") as f:
            f.write(block[off:off + size])


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("small", "million"):
        sys.exit("usage: make_tree.py small|million ROOT N")
    {"small": small, "million": million}[sys.argv[1]](sys.argv[2], int(sys.argv[3]))
