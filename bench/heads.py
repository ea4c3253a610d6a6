"""heads_overview_128/512 and browser_heads_128/512: the heads page at 128 and 512 tokens, in Python and in Chromium.

forward_s: the MiniLM forward pass with attentions; build_s: everything between the trace and the
figure JSON the page sends; payload_bytes: that JSON's size; paint_s: from submitting the text in
Chromium until the overview of all 72 heads is painted (its last row names the text's last token).
quick: 32 tokens. Smoke (bench/__main__.py's SMOKE): `tokens` and `runs` smaller still, and the paint without its
warm-up text (warm=False), so paint_s then includes the page's first draw of that size.
"""
from __future__ import annotations

import statistics
import time

WORDS = ("the river bank was quiet in the morning and the old man sat on a wooden bench "
         "watching boats drift past while birds sang in the tall green trees").split()


def text_of(n_tokens: int) -> str:
    """A sentence that MiniLM's tokenizer writes as exactly n_tokens tokens ([CLS] and [SEP] included)."""
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_tokens - 2))


def median_s(fn, runs: int) -> float:
    """Median wall-clock seconds of `runs` calls of fn()."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def overview(quick: bool, n_tokens: int = 128, tokens: int | None = None, runs: int | None = None) -> dict:
    """tokens, runs: the text's length and the timed runs instead of quick's or the full ones (the smoke's sizes)."""
    import models
    from viz.heads import overview as build

    n = tokens or (32 if quick else n_tokens)
    runs = runs or (3 if quick else 5)
    bert, text = models.shared("bert"), text_of(n)  # the smoke holds one for every entry
    trace = bert.attend(text)
    assert len(trace.tokens) == n, len(trace.tokens)
    forward = median_s(lambda: bert.attend(text), runs)
    build_s = median_s(lambda: build(trace.weights, trace.tokens, trace.key_tokens).to_json(), runs)
    payload = len(build(trace.weights, trace.tokens, trace.key_tokens).to_json().encode())
    return {"forward_s": round(forward, 4), "build_s": round(build_s, 4), "payload_bytes": payload, "tokens": n}


def overview_512(quick: bool, **smaller) -> dict:
    return overview(quick, 512, **smaller)


# the page's parts, found by the keys the view gives them (Streamlit writes a key as the class st-key-<key>), never
# by a sentence other text can repeat ("512 tokens" is also in the model's caption)
OVERVIEW = '[class*="st-key-heads_overview_"] .js-plotly-plot'  # the figure of every head
SUMMARY = ".st-key-heads_summary"  # 'MiniLM-L6, … · 128 tokens · self attention'
# the last row label of the painted overview, e.g. 'L5 · river (127)' or, pooled, 'L5 · the … bank (504–511)'
LAST_ROW_JS = """() => {
  const gd = document.querySelector('""" + OVERVIEW + """');
  if (!gd || !gd.data || !gd.data[0] || !gd.querySelector('.heatmaplayer image')) return '';
  const rows = gd.data[0].y.filter(label => label.startsWith('L'));
  return rows[rows.length - 1];
}"""


def browser_paint(quick: bool, n_tokens: int = 128, tokens: int | None = None, warm: bool = True,
                  reuse: bool = False) -> dict:
    """tokens: the text's length instead of quick's or n_tokens; warm=False: no warm-up text before the timed one;
    reuse: inside bench.browser.shared() (the smoke), the Heads page an earlier entry with reuse left open, if any,
    instead of opening and drawing a fresh one (seconds of Chromium's CPU each)."""
    from bench.browser import SHARED, chromium, new_page, serve, submit_text, telling

    n = tokens or (32 if quick else n_tokens)
    last = lambda k: f"() => /[(–]{k - 1}\\)$/.test(({LAST_ROW_JS})())"  # noqa: E731 - painted up to token k-1
    with serve() as url, chromium() as browser:
        page = SHARED.get("heads_page") if reuse else None
        fresh = page is None
        if fresh:
            page = new_page(browser)
            if reuse and "url" in SHARED:
                SHARED["heads_page"] = page
        with telling(page):
            if fresh:
                page.goto(url + "/heads")
                page.get_by_role("heading", name="Every head at a glance").wait_for(timeout=120_000)
                page.wait_for_function(f"() => ({LAST_ROW_JS})() !== ''", timeout=120_000)
            # warm up with a shorter input, so paint_s is neither a model load nor the page's first draw
            if warm:
                submit_text(page, text_of(n - 1))
                page.wait_for_function(last(n - 1), timeout=120_000)
            submit_text(page, text_of(n))
            start = time.perf_counter()
            page.locator(SUMMARY, has_text=f" · {n} tokens · ").wait_for(timeout=120_000)
            page.wait_for_function(last(n), timeout=120_000)
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            paint = time.perf_counter() - start
    return {"paint_s": round(paint, 3), "tokens": n}


def browser_paint_512(quick: bool, **smaller) -> dict:
    return browser_paint(quick, 512, **smaller)
