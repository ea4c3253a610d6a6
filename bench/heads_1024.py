"""heads_overview_1024h, finder_1024h and browser_heads_1024h: a thousand heads on one page.

The model is Llama-2-7B's head layout, 32 layers × 32 heads, with random weights and a hidden size of 64 (written
by bench.tiny_families: a character tokenizer, so a text of n characters is n + 1 tokens with <s>), at 512 tokens:
payload_bytes and build_s of the heads overview's figure, the seconds Find a head takes to score and rank all
1,024 heads on every behaviour it offers, and paint_s, from submitting the text on an open Heads page in Chromium
until the overview is painted (the attention kept by the server; fresh_link_s: a fresh link instead). quick: 64
tokens; smoke (bench/__main__.py's SMOKE): `tokens` fewer still.
"""
from __future__ import annotations

import functools
import tempfile
import time
import urllib.parse
from pathlib import Path

from bench.heads import LAST_ROW_JS, median_s

LAYERS = HEADS = 32
LETTERS = "the quick brown fox jumps over the lazy dog while the river runs on "


@functools.cache
def folder() -> Path:
    """A 32 × 32-head Llama with random weights, written once per process to a temporary folder."""
    from bench import tiny_families

    root = Path(tempfile.mkdtemp(prefix="llama-1024h-"))
    return tiny_families.write("llama", root / "llama-1024h", layers=LAYERS, heads=HEADS, d=64, ffn=128, positions=640)


def text_of(n_tokens: int) -> str:
    """n_tokens - 1 characters: with <s>, exactly n_tokens tokens."""
    return (LETTERS * (n_tokens // len(LETTERS) + 1))[:n_tokens - 1]


def _trace(n: int):
    import models

    trace = models.load(f"hf:{folder()}").attend(text_of(n))
    assert trace.weights.shape[:3] == (LAYERS, HEADS, n), trace.weights.shape
    return trace


def overview(quick: bool, tokens: int | None = None) -> dict:
    from viz.heads import overview as build

    n = tokens or (64 if quick else 512)
    trace = _trace(n)
    build_s = median_s(lambda: build(trace.weights, trace.tokens, trace.key_tokens).to_json(), 3)
    payload = len(build(trace.weights, trace.tokens, trace.key_tokens).to_json().encode())
    return {"payload_bytes": payload, "build_s": round(build_s, 3), "heads": LAYERS * HEADS, "tokens": n}


def finder(quick: bool, tokens: int | None = None) -> dict:
    from analysis import patterns

    n = tokens or (64 if quick else 512)
    trace = _trace(n)

    def rank_all():
        scores = patterns.behaviour_scores(trace.weights, trace.tokens)
        return {name: patterns.rank(table) for name, table in scores.items()}

    assert all(len(r) == LAYERS * HEADS for r in rank_all().values())
    return {"seconds": round(median_s(rank_all, 3), 3), "heads": LAYERS * HEADS, "tokens": n}


def browser_paint(quick: bool, tokens: int | None = None, warm: bool = True) -> dict:
    """paint_s as browser_heads_512 measures MiniLM: on an open Heads page, the text submitted in the sidebar until
    every head is painted, here with the attention already kept by the server (for 1,024 heads the forward pass
    alone is 7 s of one core, the model's cost rather than the page's); fresh_link_s: a fresh link to the same
    page, the attention kept, until painted (a whole page load). warm=False: no untimed first visit (the smoke's:
    fresh_link_s then includes the model's load and first run)."""
    from bench.browser import chromium, new_page, serve, submit_text, telling

    n = tokens or (64 if quick else 512)
    query = urllib.parse.urlencode({"model": "hf:", "hf_spec": str(folder()), "text": text_of(n)})
    done = lambda k: (f"() => {{ const r = ({LAST_ROW_JS})() || ''; "  # noqa: E731 - the last layer, painted to token k-1
                      f"return r.startsWith('L{LAYERS - 1}') && /[(–]{k - 1}\\)$/.test(r); }}")
    frames = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
    with serve() as url, chromium() as browser:
        page = new_page(browser)
        with telling(page):
            if warm:  # a first visit loads the model, runs it and loads the chart code: not timed
                page.goto(f"{url}/heads?{query}")
                page.wait_for_function(done(n), timeout=600_000)
                page.goto("about:blank")
            start = time.perf_counter()
            page.goto(f"{url}/heads?{query}")
            page.wait_for_function(done(n), timeout=600_000)
            page.evaluate(frames)
            fresh = time.perf_counter() - start
            submit_text(page, text_of(n // 2))  # another text drawn first (its forward pass is not timed)
            page.wait_for_function(done(n // 2), timeout=600_000)
            submit_text(page, text_of(n))
            start = time.perf_counter()
            page.wait_for_function(done(n), timeout=600_000)
            page.evaluate(frames)
            paint = time.perf_counter() - start
    return {"paint_s": round(paint, 3), "fresh_link_s": round(fresh, 3), "heads": LAYERS * HEADS, "tokens": n}
