#!/usr/bin/env python3
"""A tiny user-space TCP relay on loopback: a lane whose path a test can kill.

  tcp_proxy.py TARGET_PORT PORT_FILE [--delay-ms D] [--freeze-after BYTES]

Listens on 127.0.0.1 (a free port, written to PORT_FILE) and relays every
connection to 127.0.0.1:TARGET_PORT, holding each read D ms back (a longer
path). Two ways to kill the path, neither of which closes anything:
  - SIGSTOP the relay: nothing moves on from then on;
  - --freeze-after BYTES: once a connection has relayed BYTES from its
    client, that connection relays nothing more either way (a path that
    dies at a known point: after a lane's join, at its first data frame).
Small socket buffers, so a dead relay stalls its sender quickly.
"""
import argparse
import os
import socket
import threading
import time

BUF = 64 * 1024


class Link:
    def __init__(self, freeze_after):
        self.freeze_after = freeze_after
        self.from_client = 0
        self.frozen = threading.Event()

    def hold_if_frozen(self):
        while self.frozen.is_set():
            time.sleep(3600)


def pump(src, dst, link, delay, from_client):
    try:
        while True:
            link.hold_if_frozen()
            data = src.recv(BUF)
            link.hold_if_frozen()  # a dead path passes on neither bytes nor a close
            if not data:
                break
            if delay:
                time.sleep(delay)
            dst.sendall(data)
            if from_client:
                link.from_client += len(data)
                if link.freeze_after is not None and link.from_client >= link.freeze_after:
                    link.frozen.set()
    except OSError:
        link.hold_if_frozen()
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target_port", type=int)
    ap.add_argument("port_file")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--freeze-after", type=int)
    a = ap.parse_args()
    target = ("127.0.0.1", a.target_port)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(ls.getsockname()[1]))
    os.replace(a.port_file + ".tmp", a.port_file)
    while True:
        c, _ = ls.accept()
        u = socket.create_connection(target)
        for s in (c, u):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, BUF)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, BUF)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link = Link(a.freeze_after)
        delay = a.delay_ms / 1000
        threading.Thread(target=pump, args=(c, u, link, delay, True), daemon=True).start()
        threading.Thread(target=pump, args=(u, c, link, delay, False), daemon=True).start()


if __name__ == "__main__":
    main()
