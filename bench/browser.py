"""A real app server and a real headless Chromium, for browser tests and browser benchmarks.

Starts `streamlit run app.py` on a free local port and Debian's Chromium through Playwright with
outside networking off. Does not install a browser: `make test` installs Debian's chromium.
"""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(timeout_s: float = 60.0):
    """Yield the base URL of a fresh app server; stop it afterwards."""
    port = _free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            time.sleep(0.2)
        else:
            raise RuntimeError("the app server did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@contextlib.contextmanager
def chromium():
    """Yield a Playwright browser (headless Debian Chromium); requests leave only to localhost."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser, width: int = 1400, height: int = 1000):
    """A page that refuses every request not going to the local app server."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("http://127.0.0.1")
               or route.request.url.startswith("data:") else route.abort())
    return page


def submit_text(page, text: str) -> None:
    """Type into the sidebar's Text box and apply it (Ctrl+Enter), as a person would."""
    box = page.get_by_label("Text", exact=True)
    box.fill(text)
    box.press("Control+Enter")


OVERVIEW_ROWS_JS = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  if (!gd || !gd.data || !gd.data[0]) return 0;
  const painted = gd.querySelector('.heatmaplayer image');
  return painted ? gd.data[0].y.length : 0;
}"""
