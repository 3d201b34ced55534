"""What the browser tests (serve_browser.py, share_browser.py) share: ending
the processes they started — SIGTERM, 5 s, then SIGKILL — and their scratch dir."""
import shutil
import signal
import subprocess


def stop_all(procs, workdir):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(workdir, ignore_errors=True)
