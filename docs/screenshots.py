"""Screenshots of every view for the README and the home page: python -m docs.screenshots [view ...]

Opens each view in headless Chromium with the default inputs, waits until its run has ended and every
element is drawn, and saves docs/screenshots/<view>.png (the first screen, as a newcomer sees it) and the home
page's thumbnail of it, docs/screenshots/thumbs/<view>.jpg (made here, not on the home page's first visit: shrinking
24 screenshots held the server's first paint back by about a second).
The views' icons are emoji: the machine needs an emoji font (Debian's fonts-noto-color-emoji), or they
come out as empty boxes.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

from bench.browser import chromium, new_page, serve, visit
from ui.views import present

OUT = Path(__file__).resolve().parent / "screenshots"
THUMBS = OUT / "thumbs"
# views shown on another model or text than the sidebar's defaults (the lesson's examples), as link parameters
QUERY = {"next_token": "model=gpt&text=for+i+in+range%2810%29%3A%0A++++print%28i&nt_tab=Direct+logit+attribution",
         "patching": "model=gpt",
         "circuits": "model=induction",
         "attribution": "model=bert&text=The+river+bank+was+muddy+after+the+rain&text_b=The+shore+was+dirty"}
# views whose figures come from a job that runs after the page is drawn: wait for this many charts
CHARTS = {"circuits": 1}


def thumbnail(png: Path) -> bytes:
    """A screenshot shrunk to fit 480 x 480 px, as JPEG (quality 85): what the home page shows beside each view."""
    from PIL import Image

    with Image.open(png) as im:
        im = im.convert("RGB")
        im.thumbnail((480, 480))
        out = io.BytesIO()
        im.save(out, "JPEG", quality=85)
    return out.getvalue()


def save_thumbnails() -> None:
    """docs/screenshots/thumbs/<view>.jpg for every view's screenshot (the home page's own is not shown on it)."""
    THUMBS.mkdir(exist_ok=True)
    for view in present()[1:]:
        if (OUT / f"{view.stem}.png").exists():
            (THUMBS / f"{view.stem}.jpg").write_bytes(thumbnail(OUT / f"{view.stem}.png"))


def main(views: list[str]) -> None:
    OUT.mkdir(exist_ok=True)
    with serve() as url, chromium() as browser:
        page = new_page(browser, 1400, 900)
        visit(page, url)
        for view in views:
            visit(page, f"{url}/{view}" + (f"?{QUERY[view]}" if view in QUERY else ""))
            if view in CHARTS:
                page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot').length >= {CHARTS[view]}",
                                       timeout=120_000)
            page.wait_for_timeout(1500)  # plotly's own transitions, after the app has drawn every element
            page.screenshot(path=str(OUT / f"{view}.png"))
            print("saved", view, flush=True)
        visit(page, url)
        page.screenshot(path=str(OUT / "home.png"))
    save_thumbnails()


if __name__ == "__main__":
    main(sys.argv[1:] or [v.stem for v in present()[1:]])
