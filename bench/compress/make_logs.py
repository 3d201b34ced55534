#!/usr/bin/env python3
"""make_logs.py OUT SIZE: SIZE bytes of generated access-log lines (seeded),
a 64 MiB block repeated. Compression works per 256 KiB frame, so the repeat
gains nothing; zstd -1 gives ~3.5:1 on these lines. Used by
bench/compress/run and bench/netlab/tree."""
import random
import sys

BLOCK = 64 << 20


def block():
    random.seed(18)
    levels = ['INFO'] * 6 + ['DEBUG'] * 3 + ['WARN', 'ERROR']
    paths = ['/api/v1/items', '/api/v1/users', '/static/app.js', '/healthz', '/api/v2/orders', '/login']
    out, size = [], 0
    while size < BLOCK:
        line = (f"2026-12-{random.randint(1, 28):02d}T{random.randint(0, 23):02d}:{random.randint(0, 59):02d}:"
                f"{random.randint(0, 59):02d}.{random.randint(0, 999):03d}Z {random.choice(levels):5} "
                f"[worker-{random.randint(0, 31)}] req={random.getrandbits(64):016x} "
                f"{random.choice(['GET', 'POST', 'PUT'])} {random.choice(paths)} status={random.choice([200, 200, 200, 201, 304, 404, 500])} "
                f"bytes={random.randint(0, 99999)} took={random.random() * 300:.2f}ms user_id={random.randint(1, 500000)}\n")
        out.append(line)
        size += len(line)
    return ''.join(out)[:BLOCK].encode()


def main():
    out, size = sys.argv[1], int(sys.argv[2])
    b = block()
    with open(out, 'wb') as f:
        left = size
        while left > 0:
            f.write(b[:left])
            left -= len(b)


if __name__ == '__main__':
    main()
