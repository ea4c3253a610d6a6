"""In a real Chromium with every outside request refused: the offline bertviz pages draw, and tokens stay text."""
import numpy as np
import pytest

from analysis.trace import AttentionTrace
from bench.browser import chromium
from tests.browser.offline import offline_page
from viz.bertviz_offline import head_view_html, model_view_html

EVIL = "<img src=x onerror=alert(1)>"
SHOWN = EVIL.replace(" ", "␣")  # labels make whitespace visible (analysis.tokens)
TOKENS = ["[CLS]", "the", "bank", "[SEP]", EVIL, "</script>", "[SEP]"]  # a pair: B starts at 4


def _trace(tokens, key_tokens=None, kind="self", layers=2, heads=3):
    key_tokens = tokens if key_tokens is None else key_tokens
    w = np.exp(4 * np.random.default_rng(1).normal(size=(layers, heads, len(tokens), len(key_tokens))))  # some < 0.5%
    return AttentionTrace(tokens, key_tokens, (w / w.sum(-1, keepdims=True)).astype(np.float32), kind)


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def open_page(browser, tmp_path):
    """Open an HTML string from a file; collect outside requests, dialogs and script errors."""
    seen = {"outside": [], "dialogs": [], "errors": []}
    pages = []

    def open_(html: str):
        path = tmp_path / f"view{len(pages)}.html"
        path.write_text(html, encoding="utf-8")
        page = offline_page(browser, seen)
        page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        page.wait_for_selector("#vis svg line", state="attached", timeout=30_000)
        pages.append(page)
        return page

    yield open_
    for p in pages:
        p.close()
    assert seen == {"outside": [], "dialogs": [], "errors": []}


def _lines(page) -> int:
    return page.evaluate("document.querySelectorAll('#vis svg line').length")


def _visible(weights) -> int:
    """Lines bertviz shows with opacity > 0: weights that are at least 1% once rounded."""
    return int((np.rint(weights * 100) > 0).sum())


def test_head_view_draws_every_head_and_slices_the_pair(open_page):
    tr = _trace(TOKENS)
    page = open_page(head_view_html(tr))
    assert _lines(page) == _visible(tr.weights[0]) < tr.weights[0].size  # layer 0, every head
    texts = page.locator("#vis svg text").all_text_contents()
    assert SHOWN in texts and "</script>" in texts  # drawn as text
    assert page.locator("img").count() == 0
    page.select_option("#filter", label="Sentence A -> Sentence B")
    assert _lines(page) == _visible(tr.weights[0, :, :4, 4:])
    page.select_option("#layer", "1")
    assert _lines(page) == _visible(tr.weights[1, :, :4, 4:])
    lines = "[...document.querySelectorAll('#vis svg line')]"
    y2 = page.evaluate(f"{lines}.map(l => +l.getAttribute('y2'))")
    rows = page.evaluate(f"{lines}.map(l => +l.getAttribute('right-token-index'))")
    assert y2 == [30 + r * 22.5 + 11.25 for r in rows]  # skipped lines keep every other line's place
    page.locator("#vis svg text", has_text="bank").first.hover()  # bertviz's hover highlight runs
    assert page.locator("line[visibility='visible']").count() > 0


def test_model_view_draws_all_thumbnails_and_a_detail(open_page):
    tr = _trace(TOKENS)
    page = open_page(model_view_html(tr))
    assert _lines(page) == _visible(tr.weights)
    page.mouse.click(60, 60)  # the first thumbnail opens its detail
    page.wait_for_selector("#vis svg .detail", state="attached")
    assert SHOWN in page.locator("#vis svg text.token").all_text_contents()


def test_cross_attention_draws_decoder_against_encoder(open_page):
    tr = _trace(["<s>", "12", "</s>"], ["june", "12", ",", "2020"], kind="cross")
    page = open_page(head_view_html(tr))
    assert _lines(page) == _visible(tr.weights[0])
    assert page.locator("#filter").count() == 0


def test_heads_page_link_opens_bertviz_inside_the_app(browser):
    from urllib.parse import urlencode

    from bench.browser import new_page, serve

    link = {"text": f"The bank {EVIL}", "heads_bertviz": "true", "heads_layer": "L2"}
    with serve() as url:
        page = new_page(browser)
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{url}/heads?{urlencode(link)}")
        frame = page.frame_locator("iframe[title^='bertviz']")  # its title is its name for a screen reader
        frame.locator("#vis svg line").first.wait_for(state="attached", timeout=90_000)
        assert {"<", "=", ">", "alert"} <= set(frame.locator("#vis svg text").all_text_contents())  # WordPiece text
        assert frame.locator("img").count() == 0 and page.locator("img[src='x']").count() == 0
        assert "heads_layer=L2" in page.url and "heads_bertviz=true" in page.url
        assert page.get_by_label("Text", exact=True).input_value() == link["text"]
        assert dialogs == []
