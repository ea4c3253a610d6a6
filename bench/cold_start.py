"""cold_start: how fast the app first paints from a cold `streamlit run app.py`, and its memory once every view ran.

first_paint_s: from starting the server process until Chromium (already open) shows the home page's
title and the sidebar's Text box, painted. Median of 3 cold starts (1 with quick).
rss_bytes: the server's resident memory after visiting every view of app.py once with its defaults,
in one browser session. import_s: seconds `import app`'s modules take in a fresh Python (streamlit
included), a hint at where first_paint_s goes. It does not measure warm reruns (see heads figures).
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

from bench.browser import ROOT, chromium, new_page, open_view, rss_bytes, serve, views, wait_run

PAINTED_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def _first_paint(browser, visit_all: bool) -> tuple[float, int | None]:
    page = new_page(browser)
    start = time.perf_counter()
    with serve() as url:
        page.goto(url)
        page.get_by_role("heading", name="Attention Explorer").wait_for(timeout=120_000)
        page.get_by_label("Text", exact=True).wait_for(timeout=120_000)
        page.evaluate(PAINTED_JS)
        paint = time.perf_counter() - start
        rss = None
        if visit_all:
            wait_run(page, 0)
            for _, title, _ in views():
                open_view(page, title)
            rss = rss_bytes(url.pid)
    page.close()
    return paint, rss


def _import_s() -> float:
    code = ("import time; t = time.perf_counter(); "  # -c in the project root: the root is on the path
            "import streamlit, models, models.devices, ui.state; print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def measure(quick: bool) -> dict:
    with chromium() as browser:
        paint, rss = _first_paint(browser, visit_all=True)
        paints = [paint] + [_first_paint(browser, visit_all=False)[0] for _ in range(0 if quick else 2)]
    return {"first_paint_s": round(statistics.median(paints), 3), "rss_bytes": rss,
            "import_s": round(_import_s(), 3), "views": len(views())}


if __name__ == "__main__":
    print(measure("--quick" in sys.argv))
