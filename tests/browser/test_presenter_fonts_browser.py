"""In a real Chromium, presenter mode keeps its promise of no figure text under 16 px as the browser draws it: the
ticks and legends a figure leaves unset too (Streamlit's theme would draw them at 15 px), on the lesson's views."""
import pytest

from bench.browser import chromium, new_page, serve, visit

SMALLEST_JS = """() => [...document.querySelectorAll('.js-plotly-plot text')]
  .filter(t => t.textContent.trim() && t.getBBox().width > 0)
  .map(t => [parseFloat(getComputedStyle(t).fontSize), t.textContent.trim().slice(0, 20)])"""
PAGES = ("induction?lesson=10", "heads?lesson=2", "graph?lesson=6", "inside_head?lesson=1", "positional?lesson=3",
         "next_token?lesson=9")


@pytest.mark.slow
def test_no_figure_text_under_16_px_in_presenter_mode():
    with serve() as url, chromium() as browser:
        page = new_page(browser, 1280, 720)
        for path in PAGES:
            visit(page, f"{url}/{path}&presenter=true")
            page.wait_for_timeout(1000)
            texts = page.evaluate(SMALLEST_JS)
            assert texts, f"{path}: no figure text drawn"
            small = [(size, text) for size, text in texts if size < 16]
            assert not small, f"{path}: {small[:5]}"
