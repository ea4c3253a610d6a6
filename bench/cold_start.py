"""cold_start: how fast the app first paints from a cold `streamlit run app.py`, and its memory once every view ran.

first_paint_s: from starting the server process until Chromium (already open) shows the home page's
title and the sidebar's Text box, painted. Median of 3 cold starts (1 with quick). first_paint_cpu_s: the CPU
seconds the server process had used by then (same starts, median), which other work on a shared machine
stretches far less than the wall time; server_up_s: of first_paint_s, the part until Streamlit's server answers its
health check (its own start, before the app's code runs; the same starts, median; None in the smoke, whose server
was started elsewhere); streamlit_floor_s: the same first paint of a Streamlit script with nothing but the two
elements it waits for (BARE), on the same machine and Chromium (median of as many starts, each before one of the
app's; one in the smoke, while its server runs): the least that Streamlit's own start, its page in the browser and
one run take here, which the app's figure cannot go below; load_1m: the load average when it finished.
rss_bytes: the server's resident memory after visiting every view of app.py once with its defaults,
in one browser session. per_view: for each view (its file's name), in menu order, what its first visit left:
rss_delta_bytes, the server's resident memory after it less before it (a model loaded by an earlier view is
not counted again), and store_bytes, what the server's stores (ui.runtime.cache: models and results) hold after it.
import_s: seconds `import app`'s modules take in a fresh Python (streamlit included), a hint at where
first_paint_s goes. It does not measure warm reruns (see heads figures).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.browser import (
    ROOT,
    SHARED,
    chromium,
    cpu_s,  # noqa: F401 - read here by its test, where it was written first
    first_paint,
    new_page,
    open_view,
    rss_bytes,
    serve,
    store_bytes,
    telling,
    views,
    wait_run,
)


def visit_every_view(page, url, only: tuple[str, ...] | None = None) -> dict:
    """Open each view once in this page, in menu order -> {view: {"rss_delta_bytes", "store_bytes"}}.
    url: a server started with serve(stats=...); only: these views (files' names) alone."""
    per_view, rss = {}, rss_bytes(url.pid)
    for path, title, _ in views():
        if only is not None and Path(path).stem not in only:
            continue
        open_view(page, title, timeout_s=300)  # a first visit loads its model; a busy machine took over 90 s
        now = rss_bytes(url.pid)
        per_view[Path(path).stem] = {"rss_delta_bytes": now - rss, "store_bytes": store_bytes(url)}
        rss = now
    return per_view


def _first_paint(browser, visit_all: bool, only: tuple[str, ...] | None = None
                 ) -> tuple[float, float, int | None, dict | None, float]:
    """(first paint s, the server's CPU s by then, RSS and per_view after every view (visit_all), server up s)."""
    page = new_page(browser)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, serve(stats=Path(tmp) / "stores.json") as url:
        up = time.perf_counter() - start
        paint, cpu = first_paint(page, url, start)
        rss = per_view = None
        if visit_all:
            wait_run(page, 0)
            per_view = visit_every_view(page, url, only)
            rss = rss_bytes(url.pid)
    page.close()
    return paint, cpu, rss, per_view, up


# a Streamlit script with only what first_paint waits for: the floor under the app's first paint
BARE = """import streamlit as st

st.set_page_config(page_title="Attention Explorer", layout="wide")
st.sidebar.text_area("Text", "The cat sat on the mat.")
st.title("Attention Explorer")
"""


def _floor_paint(browser) -> float:
    """First paint of BARE, from a cold server started as _first_paint starts the app's (same launcher and settings)."""
    page = new_page(browser)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bare.py"
        script.write_text(BARE)
        start = time.perf_counter()
        with serve(stats=Path(tmp) / "stores.json", script=script) as url:
            paint, _ = first_paint(page, url, start)
    page.close()
    return paint


def _on_shared(only: tuple[str, ...] | None) -> tuple[float, float, int, dict]:
    """The smoke's: bench.browser.shared()'s server, whose start was timed as _first_paint times one, visited in a
    fresh page."""
    url = SHARED["url"]
    page = new_page(SHARED["browser"])
    with telling(page):
        page.goto(url)
        wait_run(page, 0)
    per_view = visit_every_view(page, url, only)
    rss = rss_bytes(url.pid)
    page.close()
    return (*SHARED["first_paint"], rss, per_view)


def _import_s() -> float:
    code = ("import time; t = time.perf_counter(); "  # -c in the project root: the root is on the path
            "import streamlit, models, models.devices, ui.state; print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def measure(quick: bool, only: tuple[str, ...] | None = None, reuse: bool = False) -> dict:
    """only: visit these views (files' names) alone, e.g. ("home", "heads"); rss_bytes is then not the figure.
    reuse: inside bench.browser.shared() (the smoke), its server's start is the one cold start, and its views are
    visited there (rss_bytes and per_view then include what earlier entries left)."""
    ups = []
    with chromium() as browser:
        if reuse and "url" in SHARED:  # the floor once, while the smoke's server still runs
            paint, cpu, rss, per_view = _on_shared(only)
            starts, floors = [(paint, cpu)], [_floor_paint(browser)]
        else:  # each of the app's starts, then the floor's, so that both see the same machine and file cache
            floors = [_floor_paint(browser)]  # first: the floor's Streamlit files are as cold as the app's first start
            paint, cpu, rss, per_view, up = _first_paint(browser, visit_all=True, only=only)
            starts, ups = [(paint, cpu)], [up]
            for _ in range(0 if quick else 2):
                floors.append(_floor_paint(browser))
                paint, cpu, _, _, up = _first_paint(browser, visit_all=False)
                starts.append((paint, cpu))
                ups.append(up)
    return {"first_paint_s": round(statistics.median(p for p, _ in starts), 3),
            "first_paint_cpu_s": round(statistics.median(c for _, c in starts), 2),
            "server_up_s": round(statistics.median(ups), 3) if ups else None,
            "streamlit_floor_s": round(statistics.median(floors), 3), "rss_bytes": rss,
            "import_s": round(_import_s(), 3), "views": len(per_view), "per_view": per_view,
            "load_1m": round(os.getloadavg()[0], 1)}


if __name__ == "__main__":
    print(measure("--quick" in sys.argv))
