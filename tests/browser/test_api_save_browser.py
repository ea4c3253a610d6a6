"""What api.save writes and what a notebook shows, in a real Chromium with every outside request refused: a saved
figure draws from its own plotly.js, a head view drawn in its notebook frame draws bertviz's lines, and a PNG and an
SVG come out of kaleido. No console error, no request leaves the file."""
import numpy as np
import pytest

import api
from analysis.trace import AttentionTrace
from bench.browser import chromium
from tests.browser.offline import offline_page

TOKENS = ["[CLS]", "the", "river", "bank", "<b>x</b>", "[SEP]"]


def _trace():
    w = np.exp(3 * np.random.default_rng(2).normal(size=(2, 3, len(TOKENS), len(TOKENS))))
    return AttentionTrace(TOKENS, TOKENS, (w / w.sum(-1, keepdims=True)).astype(np.float32), "self")


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def open_file(browser):
    """Open a file with outside requests refused; collect them and every script error."""
    seen = {"outside": [], "errors": []}
    pages = []

    def open_(path):
        page = offline_page(browser, seen)
        page.goto(path.as_uri())
        pages.append(page)
        return page

    yield open_
    for p in pages:
        p.close()
    assert seen == {"outside": [], "errors": []}


def test_a_saved_figure_draws_offline(open_file, tmp_path):
    t = _trace()
    for name, fig in (("heads", api.figures.heads(t)), ("head", api.figures.head(t, 1, 2)),
                      ("rollout", api.figures.rollout(t))):
        page = open_file(api.save(fig, tmp_path / f"{name}.html"))
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
        assert page.locator(".js-plotly-plot .heatmaplayer image").count() >= 1  # the heatmap itself is drawn
        assert page.evaluate("typeof Plotly") == "object"


def test_a_head_view_in_its_notebook_frame_draws_and_its_saved_page_too(open_file, tmp_path):
    v = api.head_view(_trace(), layer=1)
    shell = tmp_path / "cell.html"  # what a notebook puts in an output cell: the view's _repr_html_
    shell.write_text(f"<!doctype html><html><body>{v._repr_html_()}</body></html>", encoding="utf-8")
    frame = open_file(shell).frame_locator("iframe")
    frame.locator("#vis svg line").first.wait_for(state="attached", timeout=30_000)
    assert "<b>x</b>" in frame.locator("#vis svg text").all_text_contents()  # a token stays text
    page = open_file(api.save(v, tmp_path / "view.html"))
    page.wait_for_selector("#vis svg line", state="attached", timeout=30_000)


def test_png_and_svg_come_out_of_kaleido(tmp_path):
    pytest.importorskip("kaleido", reason="make notebook installs the notebook extra")
    fig = api.figures.head(_trace(), 0, 0)
    png = api.save(fig, tmp_path / "head.png").read_bytes()
    svg = api.save(fig, tmp_path / "head.svg").read_text(encoding="utf-8")
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert svg.startswith("<svg") and "L0 H0" in svg
