"""In a real Chromium: the home page, once idle, has loaded the elements' code, so a view's first chart
fetches none of it (ui/runtime/preload.py)."""
from bench.browser import chromium, drawn, new_page, open_view, runs, serve, visit
from ui.runtime import preload


def test_a_first_chart_finds_its_code_loaded():
    chunks = set(preload.chunks())
    with serve() as url, chromium() as browser:
        page = new_page(browser)
        fetched = []
        page.on("request", lambda r: fetched.append(r.url.rsplit("/", 1)[-1]))
        visit(page, url + "/")
        assert runs(page) == 1  # the harness counts the app's runs from its websocket messages: one each
        page.wait_for_function(f"() => window.__elementsPreloaded === {len(chunks)}", timeout=120_000)
        assert sorted(c for c in fetched if c in chunks) == sorted(chunks)  # each fetched once, while idle
        before = len(fetched)
        open_view(page, "Heads")
        drawn(page)
        assert runs(page) == 2
        assert page.locator(".js-plotly-plot").count() >= 1
        assert not chunks & set(fetched[before:])  # the chart, the formula, the code and the buttons were ready
