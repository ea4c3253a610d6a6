"""In a real Chromium, hosted mode: the issue's links with a number that is not finite open their view with the
link's one notice and no traceback, and the address bar drops the value
(ui/runtime/streamlit_private.py: refuse_endless_numbers)."""
import pytest

from bench.browser import chromium, new_page, serve, visit

pytestmark = pytest.mark.slow
LINKS = [("sinks", "sink_tokens", "inf"), ("seq2seq", "s2s_beam", "1e400"), ("kv_cache", "kv_context", "-1e309"),
         ("tiled", "eff_qblock", "9" * 10_000), ("precision", "quant_digit", "inf")]


def test_endless_numbers_in_links_get_the_notice_not_a_traceback(tmp_path):
    with serve(env={"ATTENTION_EXPLORER_HOSTED": "1"}) as url, chromium() as browser:
        for view, key, value in LINKS:
            page = new_page(browser.new_context())
            visit(page, f"{url}/{view}?" + ("model=vit&" if view == "precision" else "") + f"{key}={value}")
            assert page.locator("[data-testid=stException]").count() == 0, view
            notice = page.locator("[data-testid=stAlert]").filter(has_text="link parameters were not used")
            assert notice.count() == 1 and f"'{key}'" in notice.inner_text(), view
            assert f"{key}=" not in page.url and page.url.startswith(f"{url}/{view}"), page.url[:200]
            if view == "kv_cache":
                page.screenshot(path=str(tmp_path / "kv_cache.png"))
            page.context.close()
