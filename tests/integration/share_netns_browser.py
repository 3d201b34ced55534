#!/usr/bin/python3
"""`braid serve --share` and its page in headless Chromium across network
namespaces: serve in one namespace with two addresses (two veth pairs),
Chromium in another (DevTools pipe, `ip netns exec`), nothing shared but
the two links. Both namespaces are made here and removed at the end.

  - A 64 MiB file is downloaded over both addresses at once: serve's own
    per-address counters (GET /share/TOKEN/stats, by the local address a
    request came in on) show both carried chunks, and the file Chromium
    saved is identical.
  - One chunk coming over the second address is corrupted in transit: the
    test intercepts the response in the browser's network layer (DevTools
    Fetch domain — the test's hook, nothing in braid) and flips a byte.
    The page must detect it (its SHA-256), report it (serve logs it) and
    fetch the chunk again.
  - A tree of files (directories, an empty file) is uploaded through the
    page's folder input, over both addresses (serve's counters again), and
    lands identical.
  - Requests without the token get 403 with an empty body, on both addresses.

share_netns_browser.py BRAID ARTEFACT.png. Exits 77 and says why without
root (namespaces) or Chromium."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import base64

from browser_procs import DevTools, DevToolsError, chromium_args, stop_all, wait_until

braid = sys.argv[1]
shot = sys.argv[2] if len(sys.argv) > 2 else None


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


if os.geteuid() != 0:
    skip("needs root (it makes two network namespaces joined by veth pairs)")
chromium = shutil.which("chromium")
if not chromium:
    skip("chromium is not installed (apt install chromium)")
if not shutil.which("ip") or not shutil.which("curl"):
    skip("iproute2 (ip) and curl are needed")

W = tempfile.mkdtemp(prefix="braid-share-netns.")
tag = "bsh%d" % (os.getpid() % 100000)
SRV, CLI = tag + "-srv", tag + "-cli"
ADDRS = ["10.98.1.2", "10.98.2.2"]
SIZE = 64 << 20
procs = []


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    for name in ("serve.err", "chromium.err"):
        p = os.path.join(W, name)
        if os.path.exists(p):
            print("--- " + name + "\n" + open(p, errors="replace").read()[-3000:], file=sys.stderr)
    raise SystemExit(1)


def sh(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r.stdout


def wait_for(what, pred, timeout=30.0, step=0.1):
    return wait_until(what, pred, fail, timeout, step)


def tree_files(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


try:
    for ns in (SRV, CLI):
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    for i in (1, 2):
        s, c = "%ss%d" % (tag, i), "%sc%d" % (tag, i)
        sh("ip", "link", "add", s, "netns", SRV, "type", "veth", "peer", "name", c, "netns", CLI)
        sh("ip", "-n", SRV, "addr", "add", "10.98.%d.2/24" % i, "dev", s)
        sh("ip", "-n", CLI, "addr", "add", "10.98.%d.1/24" % i, "dev", c)
        sh("ip", "-n", SRV, "link", "set", s, "up")
        sh("ip", "-n", CLI, "link", "set", c, "up")

    src, dl, up = (os.path.join(W, d) for d in ("src", "dl", "up"))
    for d in (src, dl, up):
        os.makedirs(d)
    big = os.path.join(src, "big.bin")
    with open(big, "wb") as f:
        f.write(os.urandom(SIZE))
    tree = os.path.join(W, "tree")
    for rel, n in (("a.bin", (8 << 20) + 17), ("sub/b.bin", (2 << 20) + 5), ("sub/deep/c.txt", 1000),
                   ("sub/deep/empty", 0), ("d.bin", (1 << 20) + 1)):
        os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
        with open(os.path.join(tree, rel), "wb") as f:
            f.write(os.urandom(n))
    with open(os.path.join(W, "serve.toml"), "w") as f:
        f.write(f'state_dir = "{W}/state"\n[receive]\nlisten = ["127.0.0.1:0"]\ndir = "{W}/dst"\nannounce = false\n'
                f'[dashboard]\nenabled = false\n[share]\nlisten = "0.0.0.0:0"\n'
                f'addresses = ["{ADDRS[0]}", "{ADDRS[1]}"]\nupload_dir = "{up}"\n')
    serve = subprocess.Popen(["ip", "netns", "exec", SRV, "env", "XDG_CONFIG_HOME=" + os.path.join(W, "cfg"), braid,
                              "serve", "--config", os.path.join(W, "serve.toml"), "--foreground", "--share", big],
                             stdin=subprocess.DEVNULL, stdout=open(os.path.join(W, "serve.out"), "w"),
                             stderr=open(os.path.join(W, "serve.err"), "w"))
    procs.append(serve)
    out = wait_for("braid serve to start", lambda: "state in" in open(os.path.join(W, "serve.out")).read()
                   and open(os.path.join(W, "serve.out")).read(), timeout=60)
    link = re.search(r"^braid serve: share (http://\S+)", out, re.M).group(1)
    port = int(re.search(r"http://10\.98\.1\.2:(\d+)/", link).group(1))
    token = re.search(r"/share/([0-9a-f]{64})/", link).group(1)

    # Without the token: 403 and not one byte of body, on both addresses (curl from the client's namespace).
    for a in ADDRS:
        for path in ("/share/%s/api" % ("0" * 64), "/share/%sx/f/0/chunk/0" % token, "/share/", "/"):
            got = subprocess.run(["ip", "netns", "exec", CLI, "curl", "-s", "-o", os.path.join(W, "body"), "-w",
                                  "%{http_code} %{size_download}", "http://%s:%d%s" % (a, port, path)],
                                 capture_output=True, text=True).stdout
            if got != "403 0":
                fail("%s%s without the token: %r, not '403 0' (status, body bytes)" % (a, path, got))

    dt = DevTools(["ip", "netns", "exec", CLI, *chromium_args(chromium, os.path.join(W, "profile"), "1100,900")],
                  os.path.join(W, "chromium.err"))
    procs.append(dt.proc)
    dt.call("Browser.setDownloadBehavior", behavior="allow", downloadPath=dl)
    target = dt.call("Target.createTarget", url="about:blank")["targetId"]
    page = dt.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    # The corruption: the first chunk answered over the second address gets one byte flipped on its way
    # into the page.
    dt.call("Fetch.enable", page, patterns=[{"urlPattern": "http://%s:%d/share/*/f/*" % (ADDRS[1], port),
                                             "requestStage": "Response"}])
    flipped = []

    def intercept():
        for ev in dt.pump(0.02):
            if ev.get("method") != "Fetch.requestPaused":
                continue
            p = ev["params"]
            if not flipped and p.get("responseStatusCode") == 200:
                body = dt.call("Fetch.getResponseBody", page, requestId=p["requestId"])
                data = bytearray(base64.b64decode(body["body"]) if body["base64Encoded"] else body["body"].encode())
                data[0] ^= 0xFF
                flipped.append(p["request"]["url"])
                dt.call("Fetch.fulfillRequest", page, requestId=p["requestId"], responseCode=200,
                        responseHeaders=p.get("responseHeaders", []), body=base64.b64encode(bytes(data)).decode())
                dt.call("Fetch.disable", page)  # one corruption; the rest of the chunks go unhindered
            else:
                try:
                    dt.call("Fetch.continueRequest", page, requestId=p["requestId"])
                except DevToolsError:
                    pass  # interception already off: it went on by itself

    dt.call("Page.navigate", page, url=link)
    wait_for("the share page", lambda: dt.try_eval(page, "!!(window.braidShare && braidShare.lanes.length === 2 && "
                                                         "document.querySelector('#files button'))"))
    # The tree upload through the folder input — first, while both addresses are fresh to the page's
    # scheduler (the download's interception slows the second address, and the page remembers).
    dt.call("DOM.enable", page)
    doc = dt.call("DOM.getDocument", page)["root"]["nodeId"]
    node = dt.call("DOM.querySelector", page, nodeId=doc, selector="#pick-dir")["nodeId"]
    dt.call("DOM.setFileInputFiles", page, nodeId=node, files=[tree])
    want = {os.path.join("tree", k): v for k, v in tree_files(tree).items()}
    n = len(want)
    wait_for("the %d files of the tree to be uploaded" % n, lambda: dt.try_eval(
        page, "Object.values(braidShare.uploads).filter(u => u.done).length") == n, timeout=40)
    errors = dt.eval(page, "JSON.stringify(Object.entries(braidShare.uploads).filter(([k, u]) => u.error))")
    if errors != "[]":
        fail("the page's uploads failed: " + errors)
    got = tree_files(up)
    if got != want:
        fail("the uploaded tree differs: %s vs %s" % (sorted(got), sorted(want)))
    stats = json.loads(dt.eval(page, "fetch('stats').then(r => r.text())"))
    for a in ADDRS:
        if stats["uploaded"].get(a, {}).get("bytes", 0) == 0:
            fail("serve's counters show no upload bytes over %s: %s" % (a, stats["uploaded"]))
    print("upload: %d files in %d directories identical; serve's counters per address %s" %
          (n, len({os.path.dirname(k) for k in want}), {a: (c["chunks"], c["bytes"]) for a, c in stats["uploaded"].items()}))
    # The download, started by a click on its button.
    dt.click(page, "#files button")
    state = ("window.braidShare && JSON.stringify({d: braidShare.downloads[0], v: braidShare.verifier, "
             "lanes: braidShare.lanes.map(l => ({o: l.origin, c: l.chunks, b: l.bytes, bad: l.bad}))})")
    started = time.time()
    s = None
    while time.time() - started < 45:
        intercept()
        v = dt.try_eval(page, state)
        if v and '"done":true' in v:
            s = json.loads(v)
            break
    if s is None:
        fail("the download did not finish in 45 s: %s" % dt.eval(page, state))
    if s["d"].get("error"):
        fail("the page says: " + s["d"]["error"])
    saved = os.path.join(dl, "big.bin")
    wait_for("Chromium to save big.bin", lambda: os.path.exists(saved) and os.path.getsize(saved) == SIZE, 30)
    if hashlib.sha256(open(saved, "rb").read()).digest() != hashlib.sha256(open(big, "rb").read()).digest():
        fail("the saved file differs from the shared one")
    if not flipped:
        fail("no chunk came over %s to corrupt" % ADDRS[1])
    lanes = {l["o"]: l for l in s["lanes"]}
    bad = lanes.get("http://%s:%d" % (ADDRS[1], port), {}).get("bad")
    if bad != 1:
        fail("the page counted %s bad chunks from %s, not 1: %s" % (bad, ADDRS[1], s["lanes"]))
    wait_for("serve to log the page's report of the bad chunk",
             lambda: "failed its SHA-256" in open(os.path.join(W, "serve.err")).read(), 10)
    stats = json.loads(dt.eval(page, "fetch('stats').then(r => r.text())"))
    served = stats["served"]
    for a in ADDRS:
        if served.get(a, {}).get("bytes", 0) == 0:
            fail("serve's counters show no bytes served over %s: %s" % (a, served))
    total = sum(c["bytes"] for c in served.values())
    if total < SIZE + 1:  # every chunk once, the corrupted one again
        fail("serve served %d bytes for a %d-byte file and a chunk fetched again" % (total, SIZE))
    print("download: 64 MiB identical in %.1f s, verifier %s; serve's counters per address %s; corrupted %s, "
          "detected and fetched again" % (s["d"]["seconds"], s["v"],
                                         {a: (c["chunks"], c["bytes"]) for a, c in served.items()}, flipped[0]))

    if shot:
        dt.screenshot(page, shot)
    print("PASS")
except DevToolsError as e:
    fail(str(e))
finally:
    stop_all(procs, W)
    for ns in (SRV, CLI):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
