"""heads_overview_128 and browser_heads_128: the heads page at 128 tokens, in Python and in Chromium.

forward_s: the MiniLM forward pass with attentions; build_s: everything between the trace and the
figure JSON the page sends; payload_bytes: that JSON's size; paint_s: from submitting the text in
Chromium until the overview of all 72 heads is painted. quick: 32 tokens.
"""
from __future__ import annotations

import statistics
import time

WORDS = ("the river bank was quiet in the morning and the old man sat on a wooden bench "
         "watching boats drift past while birds sang in the tall green trees").split()


def text_of(n_tokens: int) -> str:
    """A sentence that MiniLM's tokenizer writes as exactly n_tokens tokens ([CLS] and [SEP] included)."""
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_tokens - 2))


def _median_s(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def overview(quick: bool) -> dict:
    import models
    from viz.heatmaps import overview as build

    n = 32 if quick else 128
    bert, text = models.load("bert"), text_of(n)
    trace = bert.attend(text)
    assert len(trace.tokens) == n, len(trace.tokens)
    forward = _median_s(lambda: bert.attend(text), 3 if quick else 5)
    build_s = _median_s(lambda: build(trace.weights, trace.tokens, trace.key_tokens).to_json(), 3 if quick else 5)
    payload = len(build(trace.weights, trace.tokens, trace.key_tokens).to_json().encode())
    return {"forward_s": round(forward, 4), "build_s": round(build_s, 4), "payload_bytes": payload, "tokens": n}


def browser_paint(quick: bool) -> dict:
    from bench.browser import OVERVIEW_ROWS_JS, chromium, new_page, serve, submit_text

    n = 32 if quick else 128
    rows = 6 * (n + 1)
    with serve() as url, chromium() as browser:
        page = new_page(browser)
        page.goto(url + "/heads")
        page.get_by_text("Every head at a glance").wait_for(timeout=120_000)
        page.wait_for_function(f"() => ({OVERVIEW_ROWS_JS})() > 0", timeout=120_000)
        # warm up with a shorter input, so paint_s is neither a model load nor the page's first draw
        submit_text(page, text_of(n - 1))
        page.wait_for_function(f"() => ({OVERVIEW_ROWS_JS})() === {rows - 6}", timeout=120_000)
        submit_text(page, text_of(n))
        start = time.perf_counter()
        page.get_by_text(f"{n} tokens").wait_for(timeout=120_000)
        page.wait_for_function(f"() => ({OVERVIEW_ROWS_JS})() === {rows}", timeout=120_000)
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        paint = time.perf_counter() - start
    return {"paint_s": round(paint, 3), "tokens": n}
