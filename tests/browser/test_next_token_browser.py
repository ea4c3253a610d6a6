"""In a real Chromium: the Next token view on `gpt` draws its chart, appends tokens through its background job (the
poll reruns the page when they are done), and the direct logit attribution tab draws its layer × head map, where a
click on a cell picks that head."""
import urllib.parse

from bench.browser import chromium, click_point, drawn, new_page, runs, serve, settle, visit


def test_next_token_appends_and_attributes(tmp_path):
    query = urllib.parse.urlencode({"model": "gpt", "text": "import os\nos.path.", "nt_n": 3, "nt_seed": 1})
    with serve() as url, chromium() as browser:
        page = new_page(browser, 1400, 1000)
        visit(page, f"{url}/next_token?{query}")
        drawn(page)
        assert page.get_by_text("Next-token probability before and after each filter").count() >= 1
        before = runs(page)
        page.get_by_role("button", name="Append and continue").click()
        page.get_by_text("Step: go back to any earlier one").first.wait_for(timeout=120_000)
        settle(page, before)
        assert page.get_by_text("(12 tokens)").count() == 1  # 9 prompt tokens + 3 appended
        before = runs(page)
        page.get_by_role("tab", name="Direct logit attribution").click()
        settle(page, before)
        drawn(page)
        page.get_by_text("The parts sum to").first.wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / "next_token.png"), full_page=True)
        titles = " ".join(page.locator(".gtitle").evaluate_all("els => els.map(e => e.textContent)"))
        assert "Each head's direct share" in titles and "Direct logit attribution of" in titles
        assert page.locator("[data-testid=stException]").count() == 0
        charts = page.locator(".js-plotly-plot").evaluate_all("els => els.map(e => e.layout.title.text || '')")
        click_point(page, next(i for i, t in enumerate(charts) if "direct share" in t), 1 * 4 + 2, dy=6)  # L1 H2
        boxes = [page.get_by_role("combobox", name=n).input_value() for n in ("Layer to open", "Head to open")]
        assert boxes == ["L1", "H2"]
