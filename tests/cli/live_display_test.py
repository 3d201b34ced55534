#!/usr/bin/env python3
"""Both ends' live display, as a person at an 80-column terminal sees it.

A receiver and a sender run on loopback, each with its stderr on a pty of
80x24 (stdout, with the summary table, goes to a file); the sender opens 16
lanes over two paths (8 from 127.0.0.1, 8 from 127.0.0.2). What each pty
got is played through a small terminal model (cursor moves, erase line,
erase below, autowrap; a line of the display wrapping fails the test), so
"redrawn in place, fits 80 columns, no broken stacked lines" is checked on
the screen itself, not on the byte stream. Then: the display is grouped per
path (one row per path, not per lane); without a terminal there is no
escape or carriage return at all, and -v gives one line per 10 %; -q on a
terminal draws nothing.

usage: live_display_test.py BRAID
"""
import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time

BRAID = sys.argv[1]
COLS, ROWS = 80, 24
W = tempfile.mkdtemp(prefix="braid-live.")
procs = []


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    for p in procs:
        if p.poll() is None:
            p.kill()
    sys.exit(1)


def on_pty(argv, stdout_path, env):
    """Starts argv with stderr (and stdin) on a new COLSxROWS pty, stdout to a file."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    out = open(stdout_path, "wb")
    p = subprocess.Popen(argv, stdin=slave, stdout=out, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    procs.append(p)
    return p, master


def drain(master, sink, until=None, timeout=60):
    """Reads the pty into sink (bytearray) until until() or EOF or timeout."""
    end = time.time() + timeout
    while time.time() < end:
        if until and until():
            return True
        r, _, _ = select.select([master], [], [], 0.05)
        if not r:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:
            return False
        if not chunk:
            return False
        sink.extend(chunk)
    return until() if until else False


# A line of the live display: a transfer's header or one of its path rows.
DISPLAY_LINE = re.compile(r"^((send|recv) '[^']*' +\d+% |  \S.* -> )")


class Screen:
    """Just enough of a VT100 to replay the display: printable ASCII, CR, LF,
    CSI n A (up), CSI K (erase to end of line), CSI J (erase below)."""

    def __init__(self, cols):
        self.cols, self.rows, self.r, self.c = cols, [[]], 0, 0
        self.widest = 0

    def feed(self, data):
        i = 0
        while i < len(data):
            ch = data[i]
            if ch == "\x1b":
                m = re.match(r"\x1b\[([0-9;]*)([A-Za-z])", data[i:])
                if not m:
                    fail(f"an escape sequence the display should not send: {data[i:i+8]!r}")
                n = int(m.group(1) or "1") if m.group(1) else 1
                cmd = m.group(2)
                if cmd == "A":
                    self.r = max(0, self.r - n)
                elif cmd == "K":
                    del self.rows[self.r][self.c:]
                elif cmd == "J":
                    del self.rows[self.r][self.c:]
                    del self.rows[self.r + 1:]
                else:
                    fail(f"unexpected escape sequence {m.group(0)!r}")
                i += len(m.group(0))
                continue
            if ch == "\r":
                self.c = 0
            elif ch == "\n":
                self.r += 1
                while len(self.rows) <= self.r:
                    self.rows.append([])
            else:
                if self.c >= self.cols:
                    # The terminal wraps. Another message may (a warning printed before the
                    # display starts); a line of the display must never.
                    text = "".join(self.rows[self.r])
                    if DISPLAY_LINE.match(text):
                        fail(f"a line of the display wider than {self.cols} columns wrapped: {text!r}")
                    self.r += 1
                    self.c = 0
                    while len(self.rows) <= self.r:
                        self.rows.append([])
                row = self.rows[self.r]
                while len(row) < self.c:
                    row.append(" ")
                if self.c < len(row):
                    row[self.c] = ch
                else:
                    row.append(ch)
                self.c += 1
                if DISPLAY_LINE.match("".join(row)):
                    self.widest = max(self.widest, self.c)
            i += 1

    def lines(self):
        return ["".join(r).rstrip() for r in self.rows]


def env_for(name):
    e = dict(os.environ)
    e["XDG_CONFIG_HOME"] = os.path.join(W, name)
    e.pop("TERM", None)
    return e


def check_screen(text, who, paths):
    """Replays `text` (one end's stderr) and checks its last screen."""
    s = Screen(COLS)
    s.feed(text)
    lines = s.lines()
    headers = [l for l in lines if re.match(rf"^{who} '[^']*' +\d+% ", l)]
    if len(headers) != 1:
        fail(f"{who}: the screen should hold exactly one display header at the end (a clean redraw), "
             f"it holds {len(headers)}:\n" + "\n".join(lines))
    if " 100% " not in headers[0]:
        fail(f"{who}: the last frame is not at 100 %: {headers[0]!r}")
    at = lines.index(headers[0])
    rows = [l for l in lines[at + 1:] if l.startswith("  ") and "->" in l]
    got = sorted(re.sub(r"\s+", " ", l.strip()).split(" lanes")[0] for l in rows)
    if got != sorted(paths):
        fail(f"{who}: per-path rows {got}, expected {sorted(paths)}:\n" + "\n".join(lines))
    # Every frame on the way had those rows too, never a row per lane.
    if re.search(r"\bL\d+ ", text):
        fail(f"{who}: a row per lane in the display")
    redraws = len(re.findall("\x1b\\[\\d+A", text))
    print(f"{who}: {redraws} redraws in place, widest line {s.widest} columns; last frame:")
    for line in lines[at:at + 1 + len(rows)]:
        print("  " + line)


def transfer(sender_args, recv_on_pty=True, send_on_pty=True, size=48 << 20, tag="t", table=True, ask=False, once=True, recv_args=()):
    """One transfer; returns (recv stderr, send stderr, send exit code)."""
    d = os.path.join(W, tag)
    os.makedirs(os.path.join(d, "dst"))
    src = os.path.join(d, "payload.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(size))
    rargs = [BRAID, "recv", "-d", os.path.join(d, "dst"), "--listen", "127.0.0.1:0"] + (["--once"] if once else []) + ([] if ask else ["-y"]) + list(recv_args)
    renv = env_for("rcfg")
    rbuf, sbuf = bytearray(), bytearray()
    if recv_on_pty:
        rp, rmaster = on_pty(rargs, os.path.join(d, "recv.out"), renv)
    else:
        rp = subprocess.Popen(rargs, stdout=open(os.path.join(d, "recv.out"), "wb"),
                              stderr=open(os.path.join(d, "recv.err"), "wb"), env=renv)
        procs.append(rp)
        rmaster = None
    ready = lambda: re.search(rb"code (\S+) listening on 127\.0\.0\.1:(\d+)", open(os.path.join(d, "recv.out"), "rb").read())
    end = time.time() + 20
    while not ready() and time.time() < end:
        if rmaster is not None:
            drain(rmaster, rbuf, timeout=0.1)
        else:
            time.sleep(0.05)
    m = ready()
    if not m:
        fail("the receiver did not print its code and port")
    code, port = m.group(1).decode(), m.group(2).decode()
    argv = [BRAID, "send", "-c", code] + [a.replace("PORT", port) for a in sender_args] + [src, "127.0.0.1:" + port]
    senv = env_for("scfg")
    if send_on_pty:
        sp, smaster = on_pty(argv, os.path.join(d, "send.out"), senv)
    else:
        sp = subprocess.Popen(argv, stdout=open(os.path.join(d, "send.out"), "wb"),
                              stderr=open(os.path.join(d, "send.err"), "wb"), env=senv)
        procs.append(sp)
        smaster = None
    end = time.time() + 60
    answered = False
    recv_out = os.path.join(d, "recv.out")
    while (sp.poll() is None or (rp.poll() is None and once)) and time.time() < end:
        if ask and not answered and b"accept? [y/N]" in rbuf:  # the receiver asks on its terminal: yes
            os.write(rmaster, b"y\n")
            answered = True
        ms = [m for m in (rmaster, smaster) if m is not None]
        r, _, _ = select.select(ms, [], [], 0.05) if ms else ([], [], time.sleep(0.05))
        for fd in r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            (rbuf if fd == rmaster else sbuf).extend(chunk)
    for fd, buf in ((rmaster, rbuf), (smaster, sbuf)):
        if fd is not None:
            drain(fd, buf, timeout=0.3)
            os.close(fd)
    if not once:
        # A receiver that stays up prints each transfer's summary when it is verified, not at exit.
        while "every file verified" not in open(recv_out).read() and time.time() < end:
            time.sleep(0.05)
        if rp.poll() is not None:
            fail("the receiver without --once exited")
        if "every file verified" not in open(recv_out).read():
            fail("the receiver, still running, has not printed the verified transfer's summary")
        rp.terminate()
        rp.wait(10)
        if rp.returncode != 143:
            fail(f"the receiver exited {rp.returncode} on SIGTERM, expected 143")
        rp.returncode = 0
    if sp.poll() is None or rp.poll() is None:
        fail("the transfer did not end within 60 s")
    rerr = rbuf.decode() if recv_on_pty else open(os.path.join(d, "recv.err")).read()
    serr = sbuf.decode() if send_on_pty else open(os.path.join(d, "send.err")).read()
    if sp.returncode != 0 or rp.returncode != 0:
        fail(f"send exited {sp.returncode}, recv {rp.returncode}:\n{serr}\n{rerr}")
    if "every file verified" not in open(recv_out).read():
        fail("the receiver printed no summary")
    if table != ("every file verified" in open(os.path.join(d, "send.out")).read()):
        fail("the sender's summary table is " + ("missing" if table else "there with -q"))
    return rerr, serr


try:
    # 16 lanes over two paths, paced so that the display draws a few frames.
    lanes = []
    for _ in range(8):
        lanes += ["--lane", "127.0.0.1=127.0.0.1:PORT", "--lane", "127.0.0.2=127.0.0.1:PORT"]
    rerr, serr = transfer(lanes + ["--max-lanes", "17", "--rate-limit", "200Mbit/s"], tag="pty", ask=True)
    # The receiver asked in figures for people: "62.9 MiB", not "65933315 bytes".
    if not re.search(r"offers 1 entry, 48\.0 MiB: payload\.bin", rerr):
        fail("the accept prompt does not read '1 entry, 48.0 MiB': " + repr(rerr[:300]))
    # Lane 0 (the session's own) comes from 127.0.0.1 too: 9 lanes there.
    check_screen(serr, "send", ["127.0.0.1 -> 127.0.0.1 9", "127.0.0.2 -> 127.0.0.1 8"])
    check_screen(rerr, "recv", ["127.0.0.1 -> 127.0.0.1 9", "127.0.0.1 -> 127.0.0.2 8"])

    # Not a terminal: no escape, no carriage return; -v: a plain line per 10 %.
    rerr, serr = transfer(["-v", "--streams", "4", "--rate-limit", "300Mbit/s"], recv_on_pty=False,
                          send_on_pty=False, tag="plain", recv_args=["-v"])
    for who, text in (("send", serr), ("recv", rerr)):
        if "\r" in text or "\x1b" in text:
            fail(f"{who}: carriage returns or escapes written to a file: {text!r}")
    pct = [int(p) for p in re.findall(r"^braid: send '[^']*': (\d+)% ", serr, re.M)]
    if not (5 <= len(pct) <= 11 and pct == sorted(pct) and pct[-1] == 100 and len(set(pct)) == len(pct)):
        fail(f"send -v without a terminal: expected a line per 10 % up to 100 %, got {pct}:\n{serr}")
    rpct = [int(p) for p in re.findall(r"^braid: recv '[^']*': (\d+)% ", rerr, re.M)]
    if not (5 <= len(rpct) <= 11 and rpct == sorted(rpct) and rpct[-1] == 100 and len(set(rpct)) == len(rpct)):
        fail(f"recv -v without a terminal: expected a line per 10 % up to 100 %, got {rpct}:\n{rerr}")
    print(f"not a terminal: no escapes; send -v printed {pct}, recv -v {rpct}")
    # Without -v (and without a terminal): nothing.
    rerr, serr = transfer(["--rate-limit", "300Mbit/s"], recv_on_pty=False, send_on_pty=False, tag="silent",
                          size=8 << 20)
    for who, text in (("send", serr), ("recv", rerr)):
        if re.search(r"\d+% \(", text) or "\r" in text or "\x1b" in text:
            fail(f"{who} without -v and without a terminal printed progress:\n{text}")

    # -q on a terminal: no display at all.
    rerr, serr = transfer(["-q", "--rate-limit", "300Mbit/s"], tag="quiet", size=8 << 20, table=False)
    if "%" in serr or "\x1b[" in serr:
        fail(f"send -q drew a display: {serr!r}")
    print("send -q: nothing drawn")

    # A tiny transfer reads as one: bytes and milliseconds, not "0.0 MiB in 0.00 s = 0.0 Mbit/s".
    transfer([], recv_on_pty=False, send_on_pty=False, tag="tiny", size=12, once=False)
    summary = open(os.path.join(W, "tiny", "send.out")).read()
    total = [l for l in summary.splitlines() if l.startswith("total ")]
    if not total or not re.match(r"total 12 B in \d+ (ms|us)( \(first byte acked \d+ (ms|us|s) after the command\))? = [\d.]+ (bit|kbit|Mbit)/s, 1 file,", total[0]) or "0.0 MiB" in summary:
        fail("a 12-byte transfer's summary: " + repr(total))
    print(total[0])
    print("PASS")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
    shutil.rmtree(W, ignore_errors=True)
