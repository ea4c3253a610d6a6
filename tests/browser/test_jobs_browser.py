"""In a real Chromium, a long request runs as a job: its bar moves while the page stays live, the result
replaces it when done, and Cancel stops it (the polling fragment that AppTest cannot run)."""
import re
import urllib.parse

import pytest

from bench.browser import chromium, new_page, serve, wait_run

pytestmark = pytest.mark.slow
SMALL = {"kv_layers": 1, "kv_d_model": 64, "kv_nh": 4, "kv_tokens": 16}
LONG = {"kv_layers": 8, "kv_d_model": 512, "kv_nh": 8, "kv_tokens": 512}  # about a minute of work here


def test_generate_shows_its_result_and_a_long_one_can_be_cancelled():
    with serve(timeout_s=120) as url, chromium() as browser:
        page = new_page(browser)
        page.goto(f"{url}/kv_cache?{urllib.parse.urlencode(SMALL)}")
        page.get_by_text("Work: ").first.wait_for(timeout=180_000)
        wait_run(page, 0, timeout_s=180)
        page.get_by_role("button", name="Generate with and without the cache").click()
        # the summary: at this size the cache can come out faster or slower, measured either way
        page.get_by_text(re.compile(r"× (faster|slower) with the cache")).first.wait_for(timeout=180_000)
        assert page.locator("[data-testid=stException]").count() == 0

        page.goto(f"{url}/kv_cache?{urllib.parse.urlencode(LONG)}")
        page.get_by_text("Work: ").first.wait_for(timeout=180_000)
        wait_run(page, 0, timeout_s=180)
        page.get_by_role("button", name="Generate with and without the cache").click()
        page.get_by_role("button", name="Cancel").wait_for(timeout=60_000)
        page.locator("[data-testid=stProgress]").first.wait_for(timeout=60_000)
        page.get_by_role("button", name="Cancel").click()
        page.get_by_text("Cancelled.").wait_for(timeout=60_000)
        assert page.locator("[data-testid=stException]").count() == 0
