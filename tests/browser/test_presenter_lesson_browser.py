"""In a real Chromium at 1280 × 720 in presenter mode, each lesson step's question and the figure it points to are
on the first screen together: the question stays at the top and the page opens scrolled to that figure (step 1's
softmax panel was 3.5 screens down; with the banner the Heads grid no longer fitted)."""
import pytest

from bench.browser import chromium, new_page, serve, visit
from ui.classroom.lesson import LESSON

BOXES_JS = """() => {
  const box = e => e && e.getBoundingClientRect();
  const banner = box(document.querySelector('.st-key-lesson_banner'));
  const target = box(document.querySelector('.st-key-lesson_target .js-plotly-plot'));
  return {banner: banner && [banner.top, banner.bottom], target: target && [target.top, target.bottom]};
}"""


@pytest.mark.slow
def test_each_steps_question_and_its_figure_share_the_first_screen():
    with serve() as url, chromium() as browser:
        for n, step in enumerate(LESSON, 1):
            if not step.notes.marks:
                continue
            page = new_page(browser, 1280, 720)
            visit(page, f"{url}/{step.view}?lesson={n}&presenter=true")
            page.wait_for_function("() => document.querySelector('.st-key-lesson_target')?.dataset.shown",
                                   timeout=60_000)
            page.wait_for_timeout(2000)  # the figures above it may still grow: the page keeps the target in view
            got = page.evaluate(BOXES_JS)
            (b_top, b_bottom), (f_top, f_bottom) = got["banner"], got["target"]
            assert 0 <= b_top and b_bottom <= f_top + 30, f"step {n}: the question covers the figure {got}"
            assert f_bottom <= 720 + 1, f"step {n}: the figure runs past the first screen {got}"
            page.context.close()
