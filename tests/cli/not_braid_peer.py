#!/usr/bin/env python3
"""A loopback port that is not braid, for the sender to meet: prints its port
on stdout, then serves connections until killed.

usage: not_braid_peer.py http|ssh|garbage|close
  http     answers what it reads like an HTTP server (400 Bad Request)
  ssh      sends an SSH banner first, as SSH servers do
  garbage  sends bytes that are neither TLS nor text, then closes
  close    closes every connection at once, saying nothing
"""
import socket
import sys
import threading

kind = sys.argv[1]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
print(srv.getsockname()[1], flush=True)


def serve(c):
    try:
        if kind == "http":
            c.recv(4096)
            c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        elif kind == "ssh":
            c.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
            c.recv(4096)
        elif kind == "garbage":
            c.recv(4096)
            c.sendall(bytes([0x00, 0xff, 0x13, 0x37, 0x42, 0x99, 0x01, 0x02] * 8))
    except OSError:
        pass
    finally:
        c.close()


while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
