"""In a real Chromium: open the app, type a sentence, and see the heads overview painted; a click on a head's tile
opens that head (plotly selects no heatmap cell, so the click lands on the tile's click target)."""
import pytest

from bench.browser import OVERVIEW_ROWS_JS, chromium, click_point, new_page, serve, submit_text
from bench.heads import SUMMARY


@pytest.fixture(scope="module")
def app_url():
    with serve() as url:
        yield url


def test_typed_sentence_paints_the_heads_overview(app_url):
    with chromium() as browser:
        page = new_page(browser)
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(app_url + "/heads")
        page.get_by_role("heading", name="Every head at a glance").wait_for(timeout=60_000)
        submit_text(page, "Cats sleep. <img src=x onerror=alert(1)>")
        # 21 WordPiece tokens (the HTML is split into plain pieces); each layer's block is 21 rows + 1 gap
        page.locator(SUMMARY, has_text=" · 21 tokens · ").wait_for(timeout=60_000)
        page.wait_for_function(f"() => ({OVERVIEW_ROWS_JS})() === {6 * 22}", timeout=60_000)
        assert page.locator(".js-plotly-plot .heatmaplayer image").count() >= 2
        assert page.get_by_label("Text", exact=True).input_value().startswith("Cats sleep.")
        assert dialogs == []
        click_point(page, 0, 4 * 12 + 8, dx=12, dy=-15)  # L4 H8 of 6 × 12, off its tile's centre
        boxes = [page.get_by_role("combobox", name=n).input_value() for n in ("Layer", "Head")]
        assert boxes == ["L4", "H8"]
