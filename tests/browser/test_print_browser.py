"""In a real Chromium, the printable lesson as the browser prints it: the sidebar stays off the paper, nothing is cut
at one screen's height (every step's figure reaches the PDF), and the teacher sheet starts on its own page. The print
preview and the PDF go to out/ to be looked at."""
import re
from pathlib import Path

import pytest

from bench.browser import chromium, new_page, serve, visit
from ui.classroom.lesson import LESSON

OUT = Path(__file__).resolve().parents[2] / "out"


@pytest.mark.slow
def test_the_printed_lesson_holds_every_step_and_no_sidebar():
    OUT.mkdir(exist_ok=True)
    with serve() as url, chromium() as browser:
        page = new_page(browser, 1280, 720)
        visit(page, f"{url}/print_lesson")
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 7", timeout=120_000)
        page.emulate_media(media="print")
        assert not page.locator("[data-testid=stSidebar]").is_visible()
        main = page.locator("[data-testid=stMain]").bounding_box()
        last = page.locator(".st-key-print_sheet").bounding_box()
        assert last["y"] + last["height"] > 720 and main["height"] >= last["y"] + last["height"] - main["y"] - 1
        page.screenshot(path=str(OUT / "print-lesson.png"), full_page=True)
        pdf = page.pdf(format="A4", print_background=True)
        (OUT / "print-lesson.pdf").write_bytes(pdf)
        pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
        assert len(LESSON) // 2 < pages <= 3 * len(LESSON), pages
        for n, step in enumerate(LESSON, 1):  # every step is in the printed page's text
            assert f"{n}. {step.title}" in page.locator("[data-testid=stMain]").inner_text()
