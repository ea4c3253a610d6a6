"""Screenshots of every view for the README: python -m docs.screenshots [view ...]

Opens each view in headless Chromium with the default inputs, waits until its run has ended and every
element is drawn, and saves docs/screenshots/<view>.png (the first screen, as a newcomer sees it). The menu's
icons come from the Material Symbols font Streamlit serves; buttons' icons are emoji, for which the machine needs an
emoji font (Debian's fonts-noto-color-emoji), or they come out as empty boxes.
"""
from __future__ import annotations

import sys
from pathlib import Path

from bench.browser import chromium, new_page, serve, visit
from ui.views import present

OUT = Path(__file__).resolve().parent / "screenshots"
# views shown on another model or text than the sidebar's defaults (the lesson's examples), as link parameters
QUERY = {"next_token": "model=gpt&text=for+i+in+range%2810%29%3A%0A++++print%28i&nt_tab=Direct+logit+attribution",
         "patching": "model=gpt",
         "circuits": "model=induction",
         "attribution": "model=bert&text=The+river+bank+was+muddy+after+the+rain&text_b=The+shore+was+dirty"}
# views whose figures come from a job that runs after the page is drawn: wait for this many charts
CHARTS = {"circuits": 1}


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


if __name__ == "__main__":
    main(sys.argv[1:] or [v.stem for v in present()[1:]])
