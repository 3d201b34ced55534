#!/usr/bin/python3
"""`braid serve --share` in a real browser (Debian's headless Chromium,
driven over the DevTools protocol on a pipe: no selenium, no websocket
library). The page downloads a 20 MiB file over two addresses of the server
at once — 127.0.0.1 directly and 127.0.0.2 through a proxy in this script
that flips one byte of the first chunk it relays (the corruption is the
test's, in the harness, not in braid). It checks: both addresses carried
chunks, the corrupt chunk was detected (the page counts it against the
proxy's address and reports it to serve, which logs it) and fetched again,
and the file Chromium saved is identical; the page's pure-JS SHA-256
(its fallback without WebCrypto) agrees with WebCrypto; the page's scheduler,
run in virtual time over a fast and a slow fake address, finishes within 25 %
of the fluid bound with the slow one helping. Then the page uploads a file
through its file input, over both addresses, and it lands whole.

share_browser.py BRAID_BINARY [SCREENSHOT.png]. Exits 77 (skipped) and says
why when Chromium is not installed."""
import hashlib
import http.client
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from browser_procs import DevTools, DevToolsError, chromium_args, stop_all, wait_until

braid = sys.argv[1]
shot = sys.argv[2] if len(sys.argv) > 2 else None
chromium = shutil.which("chromium")
if not chromium:
    print("SKIP: chromium is not installed (apt install chromium)")
    sys.exit(77)

W = tempfile.mkdtemp(prefix="braid-share-browser.", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
procs = []


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    p = os.path.join(W, "serve.err")
    if os.path.exists(p):
        print("--- serve.err\n" + open(p).read()[-3000:], file=sys.stderr)
    sys.exit(1)


def wait_for(what, pred, timeout=60.0, step=0.1):
    return wait_until(what, pred, fail, timeout, step)


class CorruptingProxy(http.server.ThreadingHTTPServer):
    """127.0.0.2:PORT -> 127.0.0.1:PORT, HTTP-aware: flips a byte in the
    body of the first chunk it relays."""
    daemon_threads = True

    def __init__(self, port):
        self.upstream = port
        self.flipped = None
        self.relayed = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.2", port), Relay)


class Relay(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def relay(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        up = http.client.HTTPConnection("127.0.0.1", self.server.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
        up.request(self.command, self.path, body=body or None, headers=headers)
        r = up.getresponse()
        data = r.read()
        up.close()
        if "/chunk/" in self.path and self.command == "GET" and r.status == 200:
            with self.server.lock:
                self.server.relayed += 1
                if self.server.flipped is None:
                    self.server.flipped = self.path
                    data = bytes([data[0] ^ 0xFF]) + data[1:]
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("content-length", "connection", "keep-alive", "transfer-encoding"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_OPTIONS = relay


try:
    src, dl, up = (os.path.join(W, d) for d in ("src", "dl", "up"))
    for d in (src, dl, up):
        os.makedirs(d)
    big = os.path.join(src, "big.bin")
    with open(big, "wb") as f:
        f.write(os.urandom(20 << 20))
    with open(os.path.join(W, "serve.toml"), "w") as f:
        f.write(f'state_dir = "{W}/state"\n[receive]\nlisten = ["127.0.0.1:0"]\ndir = "{W}/dst"\nannounce = false\n'
                f'[dashboard]\nenabled = false\n[share]\nlisten = "127.0.0.1:0"\n'
                f'addresses = ["127.0.0.1", "127.0.0.2"]\nupload_dir = "{up}"\n')
    env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(W, "cfg"))
    serve = subprocess.Popen([braid, "serve", "--config", os.path.join(W, "serve.toml"), "--foreground", "--share", big],
                             env=env, stdin=subprocess.DEVNULL, stdout=open(os.path.join(W, "serve.out"), "w"),
                             stderr=open(os.path.join(W, "serve.err"), "w"))
    procs.append(serve)
    out = wait_for("braid serve to start", lambda: "state in" in open(os.path.join(W, "serve.out")).read()
                   and open(os.path.join(W, "serve.out")).read(), timeout=30)
    link = re.search(r"^braid serve: share (http://\S+)", out, re.M).group(1)
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", link).group(1))
    proxy = CorruptingProxy(port)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()

    dt = DevTools(chromium_args(chromium, os.path.join(W, "profile"), "1100,900"), os.path.join(W, "chromium.err"))
    procs.append(dt.proc)
    dt.call("Browser.setDownloadBehavior", behavior="allow", downloadPath=dl)
    target = dt.call("Target.createTarget", url=link + "#get=0")["targetId"]
    session = dt.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    state = lambda: dt.try_eval(session, "window.braidShare && JSON.stringify({d: braidShare.downloads[0], "
                                     "v: braidShare.verifier, lanes: braidShare.lanes.map(l => "
                                     "({o: l.origin, c: l.chunks, b: l.bytes, bad: l.bad}))})")
    s = json.loads(wait_for("the download in the page", lambda: (lambda v: v if v and '"done":true' in v else None)(
        state()), timeout=90))
    if s["d"].get("error"):
        fail("the page says: " + s["d"]["error"])
    saved = os.path.join(dl, "big.bin")
    wait_for("Chromium to save big.bin", lambda: os.path.exists(saved) and os.path.getsize(saved) == 20 << 20, 30)
    if hashlib.sha256(open(saved, "rb").read()).digest() != hashlib.sha256(open(big, "rb").read()).digest():
        fail("the saved file differs from the shared one")
    lanes = {l["o"]: l for l in s["lanes"]}
    for origin, l in lanes.items():
        if l["c"] == 0:
            fail("the address %s carried no chunk: %s" % (origin, s["lanes"]))
    if proxy.flipped is None:
        fail("the proxy relayed no chunk")
    bad = lanes["http://127.0.0.2:%d" % port]["bad"]
    if bad != 1:
        fail("the page counted %d bad chunks from the corrupting address, not 1: %s" % (bad, s["lanes"]))
    wait_for("serve to log the page's report of the bad chunk",
             lambda: "failed its SHA-256" in open(os.path.join(W, "serve.err")).read(), 10)
    if shot:
        dt.screenshot(session, shot)
    print("download: %s, %.1f s, verifier %s, chunks per address %s, corrupted %s detected and fetched again" %
          ("identical", s["d"]["seconds"], s["v"], {o: l["c"] for o, l in lanes.items()}, proxy.flipped))

    # The pure-JS SHA-256 the page uses where crypto.subtle is absent (plain HTTP on a LAN address),
    # checked here against the browser's own WebCrypto on lengths around the padding's edges.
    mismatch = dt.eval(session, """(async () => {
      for (const n of [0, 1, 55, 56, 63, 64, 65, 1000, 1048576, 1048577]) {
        const b = crypto.getRandomValues(new Uint8Array(Math.min(n, 65536)));
        const data = new Uint8Array(n); for (let i = 0; i < n; i += b.length) data.set(b.subarray(0, Math.min(b.length, n - i)), i);
        const web = hex(new Uint8Array(await crypto.subtle.digest('SHA-256', data)));
        if (hex(sha256Js(data)) !== web) return n;
      }
      return -1; })()""")
    if mismatch != -1:
        fail("the page's pure-JS SHA-256 differs from WebCrypto's on %d bytes" % mismatch)

    # The page's scheduler in virtual time (its clock replaced, requests finished by this loop in time
    # order): a fast address (10 ms a chunk) and a slow one (100 ms), 4 requests each in flight, 100
    # chunks. The fluid bound is 100 / (400 + 40) chunks/s = 227 ms.
    sim = json.loads(dt.eval(session, """(async () => {
      let now = 0;
      const realNow = performance.now;
      performance.now = () => now;
      const events = [], per = {fast: 10, slow: 100};
      const lanes = [new Lane('fast'), new Lane('slow')];
      const run = (lane, n, signal) => new Promise((resolve, reject) => {
        const ev = {at: now + per[lane.origin], resolve: () => resolve('ok')};
        events.push(ev);
        signal.addEventListener('abort', () => { ev.dead = true; reject(new Error('aborted')); });
      });
      let finished = false;
      transfer(lanes, 100, () => 1048576, run).then(() => { finished = true; });
      const settle = () => new Promise((r) => setTimeout(r, 0));
      await settle();
      while (!finished) {
        const next = events.filter((e) => !e.dead && !e.fired).sort((a, b) => a.at - b.at)[0];
        if (!next) break;
        next.fired = true; now = next.at; next.resolve();
        await settle();
      }
      performance.now = realNow;
      return JSON.stringify({finished, ms: now, fast: lanes[0].chunks, slow: lanes[1].chunks});
    })()"""))
    bound = 100 / 440 * 1000
    if not sim["finished"] or sim["slow"] == 0 or sim["ms"] > bound * 1.25:
        fail("the scheduler in virtual time: %s (fluid bound %.0f ms; the slow address must help and not "
             "hold up the end)" % (sim, bound))
    print("scheduler in virtual time: %(ms)d ms for 100 chunks, fast %(fast)d, slow %(slow)d" % sim,
          "(fluid bound %.0f ms)" % bound)

    # Upload: the page's file input, over both addresses (the proxy flips the first chunk GETs only).
    upfile = os.path.join(W, "up.bin")
    with open(upfile, "wb") as f:
        f.write(os.urandom(5 << 20 | 12345))
    dt.call("DOM.enable", session)
    doc = dt.call("DOM.getDocument", session)["root"]["nodeId"]
    node = dt.call("DOM.querySelector", session, nodeId=doc, selector="#pick")["nodeId"]
    dt.call("DOM.setFileInputFiles", session, nodeId=node, files=[upfile])
    u = json.loads(wait_for("the upload in the page", lambda: (lambda v: v if v and '"done":true' in v else None)(
        dt.try_eval(session, "JSON.stringify(braidShare.uploads['up.bin'] || null)")), timeout=60))
    landed = os.path.join(up, "up.bin")
    if not os.path.exists(landed) or open(landed, "rb").read() != open(upfile, "rb").read():
        fail("the uploaded file did not land identical")
    if [n for n in os.listdir(up) if n.startswith(".braid-upload")]:
        fail("a temporary upload file was left: %s" % os.listdir(up))
    print("PASS: 20 MiB downloaded over 2 addresses (one corrupt chunk detected, fetched again), "
          "5 MiB uploaded, both identical")
except DevToolsError as e:
    fail(str(e))
finally:
    stop_all(procs, W)
