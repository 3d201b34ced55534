#!/usr/bin/python3
"""braid serve's dashboard in a real browser (Debian's headless Chromium
driven by python3-selenium): during a rate-limited transfer the page's
throughput chart has data points for a path, an offer that waits is
accepted by clicking its button, and the pairing code's QR image decodes
(zbarimg) to the code serve printed.
A screenshot of the page mid-transfer is saved as an artefact.

serve_browser.py BRAID_BINARY [SCREENSHOT.png]. Exits 77 (skipped) and says
why when Chromium, chromedriver or selenium is not installed."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from browser_procs import stop_all, wait_until

braid = sys.argv[1]
shot = sys.argv[2] if len(sys.argv) > 2 else None

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.common.exceptions import StaleElementReferenceException
except ImportError:
    print("SKIP: python3-selenium is not installed (apt install python3-selenium)")
    sys.exit(77)
chromium = shutil.which("chromium")
driver_bin = shutil.which("chromedriver")
if not chromium or not driver_bin:
    print("SKIP: chromium and chromium-driver are not installed (apt install chromium chromium-driver)")
    sys.exit(77)

W = tempfile.mkdtemp(prefix="braid-serve-browser.", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
state = os.path.join(W, "state")
procs = []


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    for name in ("serve.err", "send.err"):
        p = os.path.join(W, name)
        if os.path.exists(p):
            print("---", name, file=sys.stderr)
            print(open(p).read()[-3000:], file=sys.stderr)
    sys.exit(1)


def env(cfg):
    e = dict(os.environ)
    e["XDG_CONFIG_HOME"] = os.path.join(W, cfg)
    e.pop("BRAID_CODE", None)
    return e


def wait_for(what, pred, timeout=30.0, step=0.1):
    return wait_until(what, pred, fail, timeout, step)


def send(name, size, code=None, extra=()):
    path = os.path.join(W, name)
    with open(path, "wb") as f:
        f.write(os.urandom(size))
    e = env("scfg")
    if code:
        e["BRAID_CODE"] = code
    p = subprocess.Popen([braid, "send", *extra, path, "127.0.0.1:%d" % port], env=e, stdin=subprocess.DEVNULL,
                         stdout=open(os.path.join(W, "send.out"), "w"), stderr=open(os.path.join(W, "send.err"), "w"))
    procs.append(p)
    return p


def offers():
    out = subprocess.run([braid, "offers", "--state-dir", state], env=env("rcfg"), capture_output=True, text=True)
    return re.findall(r"^(\d+)  ", out.stdout, re.M)


try:
    with open(os.path.join(W, "serve.toml"), "w") as f:
        f.write(f'state_dir = "{state}"\n[receive]\nlisten = ["127.0.0.1:0"]\ndir = "{W}/dst"\nannounce = false\n'
                '[dashboard]\nlisten = "127.0.0.1:0"\n[accept]\nfrom = "none"\n')
    serve = subprocess.Popen([braid, "serve", "--config", os.path.join(W, "serve.toml"), "--foreground"],
                             env=env("rcfg"), stdin=subprocess.DEVNULL, stdout=open(os.path.join(W, "serve.out"), "w"),
                             stderr=open(os.path.join(W, "serve.err"), "w"))
    procs.append(serve)
    out = wait_for("braid serve to start", lambda: "state in" in open(os.path.join(W, "serve.out")).read()
                   and open(os.path.join(W, "serve.out")).read())
    port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", out).group(1))
    code = re.search(r"^braid: code (\S+) listening", out, re.M).group(1)
    link = re.search(r"dashboard (http://\S+)", out).group(1)

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1600"):
        opts.add_argument(a)
    # TMPDIR: Chromium's singleton socket goes to the scratch dir stop_all removes, not /tmp.
    browser = webdriver.Chrome(service=Service(driver_bin, env=dict(os.environ, TMPDIR=W)), options=opts)
    try:
        browser.get(link)  # the login link: sets the cookie, redirects to the bare page
        if "token=" in browser.current_url:
            fail("the login link did not redirect to the bare address: " + browser.current_url)
        wait_for("the page", lambda: browser.find_elements(By.ID, "offers"))
        qr = wait_for("the QR code of the pairing code", lambda: browser.find_elements(By.CSS_SELECTOR, "#qr svg"))
        zbarimg = shutil.which("zbarimg")
        if zbarimg:  # the image on the page decodes to the code serve prints
            png = os.path.join(W, "qr.png")
            qr[0].screenshot(png)
            got = subprocess.run([zbarimg, "--quiet", "--raw", png], capture_output=True, text=True).stdout.strip()
            if got != code:
                fail("the QR code decodes to %r, not the pairing code %r" % (got, code))
        else:
            print("note: zbar-tools is not installed: the QR code is not decoded")

        # An offer that waits, accepted by clicking (every offer waits: [accept] from = "none").
        first = send("pair.bin", 100_000, code)

        def click_accept():
            # The page draws its offers again as their state changes: a button
            # found just before a redraw is gone by the click. Find it again.
            try:
                buttons = browser.find_elements(By.CSS_SELECTOR, "button[data-action=accept]")
                if not buttons:
                    return False
                buttons[0].click()
                return True
            except StaleElementReferenceException:
                return False
        wait_for("a click on the offer's accept button", click_accept, timeout=20)
        if first.wait(timeout=30) != 0:
            fail("the send whose offer was accepted by a click exited %d" % first.returncode)

        # A transfer slow enough to watch: its chart fills with points.
        slow = send("slow.bin", 12_000_000, extra=("--rate-limit", "24Mbit/s"))
        wait_for("the offer", offers, timeout=20)
        subprocess.run([braid, "accept", "--state-dir", state, offers()[0]], env=env("rcfg"), check=True,
                       capture_output=True)
        points = lambda: browser.execute_script(
            "return Object.values(charts).flatMap(c => c.rate.data.datasets.map(d => d.data.filter(p => p.y > 0).length))")
        wait_for("two throughput points of a path in the page's chart", lambda: max(points() or [0]) >= 2, timeout=20)
        if shot:
            os.makedirs(os.path.dirname(os.path.abspath(shot)), exist_ok=True)
            browser.save_screenshot(shot)
        if slow.wait(timeout=60) != 0:
            fail("the slow send exited %d" % slow.returncode)
        n = max(points())
        rtt = browser.execute_script(
            "return Object.values(charts).flatMap(c => c.rtt.data.datasets.map(d => d.data.length))")
        print("PASS: %d throughput points on the busiest path's chart, RTT series %s%s" %
              (n, rtt, ", screenshot " + shot if shot else ""))
    finally:
        browser.quit()
finally:
    stop_all(procs, W)
