"""In a real Chromium, as a class uses it: examples clicked inside one running session (after the student typed a
sentence of their own) land on the same view, model, text and settings as the same link opened fresh; `?lesson=n`
opened as a link equals picking step n in the sidebar; Previous and Next restore each step's model and text; no
parameter ever appears twice in the address."""
import json
from urllib.parse import parse_qsl, urlsplit

import pytest

from bench.browser import choose, chromium, new_page, open_view, page_state, runs, serve, settle, submit_text, visit
from ui.classroom.lesson import EXAMPLES, LESSON, TITLES
from ui.state import DEFAULT_MODEL, DEFAULT_TEXT

OWN = "My own sentence about a cat."


def _params(url: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(url).query, keep_blank_values=True)


def _seen(page) -> dict:
    """What a student sees: the view (its title and the path), the sidebar's text and model, every selectbox, the
    open tabs, and the address's parameters (as a dict: the test asserts separately that none repeats)."""
    state = page_state(page)
    params = _params(page.url)
    keys = [k for k, _ in params]
    assert len(keys) == len(set(keys)), f"a parameter repeats in {page.url}"
    return {"path": urlsplit(page.url).path, "title": page.locator("h1").first.inner_text().strip(),
            "text": page.get_by_label("Text", exact=True).input_value(), "model": state["selects"].get("Model"),
            "selects": state["selects"], "tabs": state["tabs"], "params": dict(params)}


def _click(page, locator) -> None:
    before = runs(page)
    locator.click()
    settle(page, before)


def _addressed(page, params: dict) -> None:
    """Wait until the address holds `params`: the browser writes a run's parameters into it after the run has drawn,
    so on a busy machine the page can be read before its address is; addresses that never match fail the test."""
    want = json.dumps(sorted(params.items()), separators=(",", ":"), ensure_ascii=False)  # as JSON.stringify writes
    page.wait_for_function(f"() => JSON.stringify([...new URLSearchParams(location.search).entries()].sort()) === "
                           f"{json.dumps(want)}", timeout=60_000)


def _fresh(browser, url: str) -> dict:
    page = new_page(browser.new_context())  # no cookies, no session: only the address
    visit(page, url)
    seen = _seen(page)
    page.context.close()
    return seen


@pytest.fixture(scope="module")
def app_url():
    with serve() as url:
        yield url


@pytest.mark.slow
def test_examples_clicked_in_one_session_equal_their_links_opened_fresh(app_url):
    with chromium() as browser:
        page = new_page(browser)
        visit(page, f"{app_url}/heads")
        submit_text(page, OWN, wait=True)  # a student's own sentence first, as in class
        settle(page, runs(page) - 1)
        for i, ex in enumerate(EXAMPLES):
            open_view(page, "Examples")
            settle(page, runs(page) - 1)
            link = page.locator("[data-testid=stPageLink] a").nth(i)
            href = link.get_attribute("href")
            _click(page, link)
            here, fresh = _seen(page), _fresh(browser, f"{app_url}/{href}")
            assert here["title"] == fresh["title"] and TITLES[ex.view] in page.locator(
                "[data-testid=stSidebarNavLink][aria-current=page]").inner_text(), ex.key
            for part in ("text", "model", "selects", "tabs", "params"):
                assert here[part] == fresh[part], f"example {i + 1} ({ex.key}): {part} differs in the session"
            assert here["text"] == ex.query().get("text", DEFAULT_TEXT) and here["model"] == ex.query().get(
                "model", DEFAULT_MODEL), ex.key


@pytest.mark.slow
def test_a_lesson_link_equals_picking_its_step_and_previous_restores_each_step(app_url):
    with chromium() as browser:
        page = new_page(browser)
        visit(page, f"{app_url}/heads")
        submit_text(page, OWN, wait=True)
        settle(page, runs(page) - 1)
        picked = {}
        for n in range(1, len(LESSON) + 1):
            _click(page, page.locator("[data-testid=stSidebar] button[data-variant=pills]").nth(n - 1))  # the Lesson
            fresh = _fresh(browser, f"{app_url}/?lesson={n}")
            _addressed(page, fresh["params"])
            picked[n] = here = _seen(page)
            for part in ("path", "title", "text", "model", "tabs", "params"):
                assert here[part] == fresh[part], f"step {n}: {part} differs between picking it and its link"
            assert here["text"] != OWN and here["params"]["lesson"] == str(n)
        assert picked[3]["tabs"][0] == "RoPE"  # the tab step 3's question is about
        for n in range(len(LESSON) - 1, 0, -1):  # Previous walks back, each step with its own model and text
            _click(page, page.get_by_role("button", name="← Previous"))
            _addressed(page, picked[n]["params"])
            back = _seen(page)
            for part in ("path", "title", "text", "model", "params"):
                assert back[part] == picked[n][part], f"Previous to step {n}: {part} differs"


@pytest.mark.slow
def test_the_transformer_head_box_keeps_its_value_across_navigation(app_url):
    with chromium() as browser:
        page = new_page(browser)
        visit(page, f"{app_url}/seq2seq?s2s_tab=Transformer+and+beam+search")
        assert page_state(page)["selects"]["Head"] == "mean of the heads"
        choose(page, "Head", "H1")
        choose(page, "Head", "mean of the heads")
        open_view(page, TITLES["heads"])
        open_view(page, TITLES["seq2seq"])
        settle(page, runs(page) - 1)
        assert page_state(page)["selects"]["Head"] == "mean of the heads"
