"""In a real Chromium: the Induction heads view paints its curves, its heads and the knock-outs."""
from bench.browser import chromium, drawn, new_page, serve, visit


def test_the_induction_view_paints_its_figures():
    with serve() as url, chromium() as browser:
        page = new_page(browser, 1400, 2600)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        visit(page, url + "/induction")
        page.get_by_text("Causal evidence at the last checkpoint").wait_for(timeout=120_000)
        drawn(page, 120)
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 3", timeout=120_000)
        assert page.locator(".js-plotly-plot .heatmaplayer image").count() >= 1  # the heads' tiles
        assert page.get_by_text("phase change by step").count() >= 1
        assert errors == []
