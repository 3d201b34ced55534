"""What the browser tests share: ending the processes they started —
SIGTERM, 5 s, then SIGKILL — and their scratch dir; driving headless
Chromium over the DevTools pipe (DevTools, chromium_args); waiting for a
condition (wait_until)."""
import shutil
import signal
import subprocess
import time


def stop_all(procs, workdir):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(workdir, ignore_errors=True)


class DevToolsError(RuntimeError):
    pass


class DevTools:
    """Headless Chromium driven over the DevTools protocol on a pipe
    (--remote-debugging-pipe: Chromium reads fd 3 and writes fd 4,
    NUL-separated JSON) — no selenium, no websocket library, and it works
    in a network namespace (prefix the command with `ip netns exec NS`).
    Events that arrive while waiting for a reply are kept in `events`."""

    def __init__(self, args, stderr_path):
        import json
        import os
        self._json, self._os = json, os
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            # Through fds >= 10 first: a pipe end that already is fd 3 or 4 would keep its close-on-exec
            # flag (dup2 onto itself does nothing) and Chromium would find it closed.
            import fcntl
            r, w = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)
        # Chromium puts its singleton socket in $TMPDIR and leaves it there when it is
        # stopped: the test's scratch dir (stderr_path's, removed by stop_all), not /tmp.
        env = dict(os.environ, TMPDIR=os.path.dirname(os.path.abspath(stderr_path)))
        self.proc = subprocess.Popen(args, preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(stderr_path, "w"), env=env)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, timeout=None):
        import select
        while b"\0" not in self.buf:
            if timeout is not None and not select.select([self.from_chrome], [], [], timeout)[0]:
                return None
            chunk = self._os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise DevToolsError("chromium closed its DevTools pipe")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\0", 1)
        return self._json.loads(line)

    def call(self, method, session=None, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self._os.write(self.to_chrome, self._json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise DevToolsError("DevTools %s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def pump(self, timeout=0.0):
        """Reads the events waiting (at most `timeout` seconds for the first) and returns every kept event."""
        m = self._read_message(timeout)
        while m is not None:
            if "method" in m:
                self.events.append(m)
            m = self._read_message(0)
        out, self.events = self.events, []
        return out

    def eval(self, session, expr):
        r = self.call("Runtime.evaluate", session, expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise DevToolsError("the page threw: %s" % r["exceptionDetails"].get("exception", {}).get("description"))
        return r.get("result", {}).get("value")

    def try_eval(self, session, expr):
        """eval, or None while the page cannot answer (loading, navigating)."""
        try:
            return self.eval(session, expr)
        except DevToolsError:
            return None

    def click(self, session, selector):
        """A real mouse click (pressed, released) at the middle of the first element `selector` finds."""
        box = self.eval(session, "(() => { const e = document.querySelector(%s); if (!e) return null;"
                                 " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
                                 " return [r.x + r.width / 2, r.y + r.height / 2]; })()" % self._json.dumps(selector))
        if not box:
            raise DevToolsError("nothing on the page matches " + selector)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session, type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, session, path):
        import base64
        png = self.call("Page.captureScreenshot", session, format="png")["data"]
        self._os.makedirs(self._os.path.dirname(self._os.path.abspath(path)), exist_ok=True)
        open(path, "wb").write(base64.b64decode(png))


def chromium_args(chromium, profile, size="1280,1600"):
    return [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--remote-debugging-pipe", "--user-data-dir=" + profile, "--window-size=" + size, "about:blank"]


def wait_until(what, pred, fail, timeout=30.0, step=0.1):
    """pred()'s first true value within `timeout` s; else fail("timed out waiting for WHAT")."""
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    fail("timed out waiting for " + what)
