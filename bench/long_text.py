"""long_text_160: how long each view takes to paint a 120-word paragraph (about 160 tokens) in Chromium.

A student opens the app once, with the paragraph in the address (a teacher's link), then goes from view to
view in the sidebar. `seconds` times each view's first visit in that open page, from the click to the end of
the app's run with every element drawn (no placeholder left): the server's models are loaded (another page
visited every view first, as a teacher does before class), but this page meets each view and its widgets for
the first time. The student reads the home page for READ_S seconds before the first click; the browser, idle
then, loads the elements' code (ui/runtime/preload.py). `page_load_s` is opening the link in a new page (the browser
loading Streamlit's own code and the app's first run on the home page), paid once per student;
`inside_head_at_once_s` is a student who clicks Inside a head (a page of charts) the moment the home page has
run, before that loading is done. Pruning uses the tiny decoder, put in the sidebar by a link before its visit,
so it comes last (scoring BERT's heads is its own figure, pruning_bert).
"""
from __future__ import annotations

import time
from urllib.parse import urlencode

from bench.browser import chromium, drawn, new_page, runs, serve, settle, views, visit, wait_run

PARAGRAPH = (
    "Attention lets every word in a sentence look at every other word and decide how much of each to take. In a "
    "transformer, a layer holds several heads, and each head learns its own way of looking: one follows the word "
    "just before, another jumps to the end of the sentence, a third gathers the whole context evenly. Teachers "
    "like to show a class the pronoun that finds its noun, because it looks like understanding, yet the same head "
    "may simply prefer the subject. When the text grows long, the pictures grow dense, and a good tool must still "
    "answer quickly, label what it can and say plainly what it leaves out. This paragraph has about one hundred and "
    "twenty words, enough to test that promise on every view.")
READ_S = 3  # seconds a student spends on the home page before the first click


def paint_s(page, title: str) -> float:
    """Click the view's sidebar link; seconds until its run has ended and everything is drawn."""
    before = runs(page)
    start = time.perf_counter()
    page.locator("[data-testid=stSidebarNavLink]", has_text=title).first.click()
    wait_run(page, before, 300)
    drawn(page, 300)
    seconds = time.perf_counter() - start
    settle(page, before, 300)  # a run that ended by starting another (a notice, a switch) is followed to its end
    return seconds


def measure(quick: bool, only: tuple[str, ...] | None = None, words: int | None = None, read_s: float = READ_S,
            teacher: bool = True, hasty: bool = True) -> dict:
    """only: these views (files' names; quick: home, heads, inside_head, graph); inside_head is needed.
    words: the paragraph's first words alone (then tokens is None); read_s: the reading pause; teacher=False: no
    teacher's visit first (the smoke's, on a server whose model is loaded already); hasty=False: no second student
    clicking at once (the smoke's: the same visit and click again; inside_head_at_once_s is then None)."""
    paragraph = PARAGRAPH if words is None else " ".join(PARAGRAPH.split()[:words])
    found = [(path.removeprefix("views/").removesuffix(".py"), title) for path, title, _ in views()]
    if quick or only:
        found = [(s, t) for s, t in found if s in (only or ("home", "heads", "inside_head", "graph"))]
    found.sort(key=lambda view: view[0] == "pruning")  # last: its model, the tiny decoder, stays in the sidebar
    link = "/?" + urlencode({"text": paragraph})
    seconds = {}
    with serve() as url, chromium() as browser:
        if teacher:  # every view once: models loaded, first-use caches filled
            first = new_page(browser)
            for stem, _ in found:
                visit(first, f"{url}/{'' if stem == 'home' else stem}?" + urlencode(
                    {"text": paragraph} | ({"model": "tiny"} if stem == "pruning" else {})), timeout_s=300)
            first.close()
        page = new_page(browser)
        start = time.perf_counter()
        visit(page, url + link, timeout_s=300)
        page_load = round(time.perf_counter() - start, 2)
        page.wait_for_timeout(read_s * 1000)  # reading (a Playwright wait: the page's requests keep flowing)
        for stem, title in found:
            if stem == "home":
                continue
            if stem == "pruning":  # the tiny decoder in the sidebar, by a link to the home page (not timed)
                visit(page, url + "/?" + urlencode({"text": paragraph, "model": "tiny"}), timeout_s=300)
            seconds[stem] = round(paint_s(page, title), 2)
        page.close()
        at_once = None
        if hasty:
            student = new_page(browser)
            visit(student, url + link, timeout_s=300)
            at_once = round(paint_s(student, dict(found)["inside_head"]), 2)
            student.close()
    slowest = max(seconds, key=seconds.get)
    return {"tokens": 154 if words is None else None, "seconds": seconds, "slowest": slowest,
            "slowest_s": seconds[slowest], "page_load_s": page_load, "read_s": read_s, "inside_head_at_once_s": at_once}
