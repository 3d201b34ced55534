#!/usr/bin/env python3
"""fault_proxy.py PORTFILE HOST:PORT [faults]: a TCP proxy on 127.0.0.1 that
a test puts in front of a braid receiver to break lanes from outside, as a
network or an attacker would (the engine has no test hooks). It writes the
port it listens on to PORTFILE, forwards every connection to HOST:PORT, and
applies the faults to the sender-to-receiver direction:

  --delay-ms MS           hold each connection MS ms before anything flows
                          (a lane that opens late)
  --kill-after BYTES      reset the first connection (RST both ways, like
                          `ss -K`) once BYTES went through it
  --kill-after-ms MS      the same, MS ms after it opened
  --corrupt-frame N       flip one bit inside the ciphertext of the N-th
                          piece_data frame (from 0) of the first connection
  --stale                 after each connection's 4th piece_data frame, send
                          again its first (a replay), the first frame of the
                          other connection (another lane), and the frame in
                          --inject (another, older session)
  --capture FILE          write the first piece_data frame seen to FILE
  --inject FILE           (with --stale) the older session's frame

The frame-aware faults need a stream of sealed frames from its first byte:
a lane that joins (not the bootstrap lane, which starts with TLS). Bounded:
it exits after --lifetime seconds (default 120) or when killed."""
import argparse, socket, struct, sys, threading, time

HEADER, TAG, PIECE_DATA = 32, 16, 7

ap = argparse.ArgumentParser()
ap.add_argument('portfile')
ap.add_argument('target')
ap.add_argument('--delay-ms', type=int, default=0)
ap.add_argument('--kill-after', type=int, default=0)
ap.add_argument('--kill-after-ms', type=int, default=0)
ap.add_argument('--corrupt-frame', type=int, default=-1)
ap.add_argument('--stale', action='store_true')
ap.add_argument('--capture')
ap.add_argument('--inject')
ap.add_argument('--lifetime', type=float, default=120)
a = ap.parse_args()
host, port = a.target.rsplit(':', 1)
frames = a.corrupt_frame >= 0 or a.stale or a.capture

lock = threading.Lock()
first_frames = []  # the first piece_data frame of each connection, in order
conn_count = 0


def reset(*socks):
    # SO_LINGER 0 makes the close an RST. The close takes effect only once no
    # thread is blocked in recv() on the socket (the kernel holds the file
    # until then), so shutdown(SHUT_RD) first wakes any such thread: the RST
    # goes at once, not whenever the next byte happens to arrive.
    for s in socks:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
            s.shutdown(socket.SHUT_RD)
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass


def read_exact(s, n):
    buf = b''
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def pump_back(src, dst):
    try:
        while True:
            b = src.recv(1 << 18)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def pump_frames(src, dst, index, killer):
    n = 0
    mine = None
    while True:
        head = read_exact(src, HEADER)
        if head is None:
            return
        length = struct.unpack('>I', head[4:8])[0]
        rest = read_exact(src, length + TAG)
        if rest is None:
            return
        frame = bytearray(head + rest)
        if frame[1] == PIECE_DATA:
            if mine is None:
                mine = bytes(frame)
                with lock:
                    first_frames.append(mine)
                if a.capture:
                    with open(a.capture, 'wb') as f:
                        f.write(mine)
            if index == 0 and n == a.corrupt_frame and len(frame) > HEADER + 100:
                frame[HEADER + 100] ^= 0x10  # inside the ciphertext: the tag no longer matches
            n += 1
        dst.sendall(frame)
        killer(len(frame))
        if frame[1] == PIECE_DATA and a.stale and n == 4:
            extra = [mine]
            with lock:
                extra += [f for f in first_frames if f != mine][:1]
            if a.inject:
                with open(a.inject, 'rb') as f:
                    extra.append(f.read())
            for e in extra:
                dst.sendall(e)


def pump_bytes(src, dst, killer):
    while True:
        b = src.recv(1 << 18)
        if not b:
            return
        dst.sendall(b)
        killer(len(b))


def serve(client):
    global conn_count
    with lock:
        index = conn_count
        conn_count += 1
    if a.delay_ms:
        time.sleep(a.delay_ms / 1000)
    try:
        up = socket.create_connection((host, int(port)))
    except OSError:
        reset(client)
        return
    moved = [0]
    armed = index == 0 and (a.kill_after or a.kill_after_ms)

    def killer(k):
        moved[0] += k
        if armed and a.kill_after and moved[0] >= a.kill_after:
            reset(client, up)
            raise OSError('killed')

    if armed and a.kill_after_ms:
        threading.Timer(a.kill_after_ms / 1000, reset, (client, up)).start()
    threading.Thread(target=pump_back, args=(up, client), daemon=True).start()
    try:
        if frames:
            pump_frames(client, up, index, killer)
        else:
            pump_bytes(client, up, killer)
    except OSError:
        return
    try:
        up.shutdown(socket.SHUT_WR)
    except OSError:
        pass


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(('127.0.0.1', 0))
ls.listen(64)
with open(a.portfile + '.tmp', 'w') as f:
    f.write(str(ls.getsockname()[1]))
import os
os.replace(a.portfile + '.tmp', a.portfile)
ls.settimeout(0.2)
end = time.monotonic() + a.lifetime
while time.monotonic() < end:
    try:
        c, _ = ls.accept()
    except socket.timeout:
        continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
