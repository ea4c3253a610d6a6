"""In a real Chromium at 1280 × 720, the tables of the lesson's steps fit their box: no column is cut at the right
(step 4's comparison of BPE and WordPiece was, beside its chart)."""
import pytest

from bench.browser import chromium, new_page, serve, visit
from ui.classroom.lesson import LESSON

OVERFLOW_JS = """() => [...document.querySelectorAll('[data-testid=stDataFrame] .dvn-scroller')]
  .map(s => s.scrollWidth - s.clientWidth)"""


@pytest.mark.slow
def test_no_table_of_a_lesson_step_is_cut_at_1280_px():
    with serve() as url, chromium() as browser:
        page = new_page(browser, 1280, 720)
        for n, step in enumerate(LESSON, 1):
            visit(page, f"{url}/{step.view}?lesson={n}")
            page.wait_for_timeout(800)
            overflow = page.evaluate(OVERFLOW_JS)
            assert all(px <= 0 for px in overflow), f"step {n} ({step.view}): a table overflows by {overflow} px"
