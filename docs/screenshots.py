"""Screenshots of every view for the README and the home page: python docs/screenshots.py [view ...]

Opens each view in headless Chromium with the default inputs, waits until it has settled, and
saves docs/screenshots/<view>.png (the first screen, as a newcomer sees it).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.browser import chromium, new_page, serve  # noqa: E402
from ui.views import present  # noqa: E402

OUT = Path(__file__).resolve().parent / "screenshots"


def settle(page, timeout_s: float = 90.0) -> None:
    """Wait until the view has drawn: no skeletons, no running script, then a moment for plots."""
    page.wait_for_load_state("networkidle")
    deadline = time.time() + timeout_s
    busy = '[data-testid="stSkeleton"], [data-testid="stStatusWidget"], [data-testid="stSpinner"]'
    time.sleep(1.5)
    while time.time() < deadline and page.locator(busy).count():
        time.sleep(0.5)
    time.sleep(2.5)


def main(views: list[str]) -> None:
    OUT.mkdir(exist_ok=True)
    with serve() as url, chromium() as browser:
        page = new_page(browser, 1400, 900)
        page.goto(url)
        settle(page)
        for view in views:
            page.goto(f"{url}/{view}")
            settle(page)
            page.screenshot(path=str(OUT / f"{view}.png"))
            print("saved", view, flush=True)
        page.goto(url)
        settle(page)
        page.screenshot(path=str(OUT / "home.png"))


if __name__ == "__main__":
    main(sys.argv[1:] or [v.stem for v in present()[1:]])
