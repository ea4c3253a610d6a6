"""In a real Chromium: HTML and script typed as text never run in any view (any dialog fails the test).

The payload goes into the sidebar's Text box and into every text box a view has of its own; every
view of app.py's VIEWS is visited in the same session. Besides dialogs, an <img src=x> or a
<script> holding the payload anywhere in the page (any frame) means text was rendered as HTML.
"""
import pytest

from bench.browser import STATE_JS, chromium, new_page, open_view, runs, serve, submit_text, views, wait_run

PAYLOAD = "<img src=x onerror=alert(1)> <script>alert(2)</script> \"><svg onload=alert(3)>"
INJECTED_JS = """() => [...document.querySelectorAll('img[src="x"], svg[onload], script')]
                     .filter(e => e.tagName !== 'SCRIPT' || e.textContent.includes('alert(')).length"""


@pytest.fixture(scope="module")
def app_url():
    with serve() as url:
        yield url


BOXES = "input[type=text]:not([role=combobox]), textarea"


def _own_text_boxes(page):
    """The view's own text boxes, each found afresh after the page is idle (a run may redraw the ones before it)."""
    main = page.locator("[data-testid=stMain]")
    for i in range(main.locator(BOXES).count()):
        page.wait_for_function(f"() => ({STATE_JS})() === 'notRunning'")
        box = main.locator(BOXES).nth(i)
        if box.count():  # a run started by the box before may have taken this one away
            yield box


def test_html_and_script_never_run_in_any_view(app_url):
    with chromium() as browser:
        page = new_page(browser)
        dialogs, crashes = [], []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(app_url)
        wait_run(page, 0)
        submit_text(page, PAYLOAD, wait=True)
        for _, title, _ in views():
            open_view(page, title)
            for box in _own_text_boxes(page):
                if box.is_visible() and box.is_editable():
                    before, old = runs(page), box.input_value()
                    box.fill(PAYLOAD)
                    box.press("Control+Enter" if box.evaluate("e => e.tagName") == "TEXTAREA" else "Enter")
                    if box.input_value() != old:  # an unchanged value asks for no run
                        wait_run(page, before)
            if page.locator("[data-testid=stException]").count():
                crashes.append(title)
            injected = sum(frame.evaluate(INJECTED_JS) for frame in page.frames)
            assert injected == 0, f"{title}: text was rendered as HTML ({injected} elements)"
        page.wait_for_timeout(500)  # an onerror fires once the broken image has failed to load
        assert page.get_by_label("Text", exact=True).input_value() == PAYLOAD
        assert dialogs == [] and crashes == []
