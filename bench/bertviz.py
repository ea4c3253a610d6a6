"""bertviz_128: the offline bertviz pages against bertviz's own, for a 128-token BERT sentence pair.

html_bytes: size of the page each writes (ours: viz.bertviz_offline; theirs: bertviz 1.4.1's
head_view / model_view with html_action="return", sentence_b_start set, so it writes the attention
twice); bertviz_single_html_bytes: bertviz's head view of one 128-token sentence (the 53 MB the
design notes quote; ours is the same size for one sentence or a pair). draw_s: from opening our
page from a file in headless Chromium (every outside request refused) until the drawn SVG is
painted (load event, then two animation frames); median of 3 for the head view, one run for the
model view. bertviz's own page cannot draw offline (require.js, d3 and jQuery come from a CDN);
bertviz_draw_s draws it anyway, with those three requests answered from this machine (the same d3
5.7.0, and the same require.js and jQuery shims our page uses), so both draw on the same machine
under the same load; the design notes quote 14 s for it with a network.
quick: 32 tokens, no model view draws.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.heads import WORDS, text_of

THEIR_DRAW_S = 14.0  # bertviz's own head view at 128 tokens with a network (design notes)


def _words(n: int, offset: int = 0) -> str:
    return " ".join(WORDS[(offset + i) % len(WORDS)] for i in range(n))


# A stand-in for require.js: load each configured path with a <script>, then call back with jQuery and d3.
REQUIRE_STUB = """
(function () {
  const paths = {};
  window.requirejs = window.require = function (deps, fn) {
    let left = deps.length;
    deps.forEach(name => { const s = document.createElement("script"); s.src = paths[name] + ".js";
      s.onload = () => { if (--left === 0) fn(window.$, window.d3); }; document.head.appendChild(s); });
  };
  window.require.config = c => Object.assign(paths, c.paths);
})();
"""


def _local_cdn(route) -> None:
    """Answer bertviz's three CDN requests from this machine; refuse everything else."""
    from viz.bertviz_offline import JQUERY_SHIM, d3_source

    url = route.request.url
    if url.startswith("file:"):
        return route.continue_()
    for part, body in (("require", REQUIRE_STUB), ("/d3/", d3_source()), ("/jquery/", JQUERY_SHIM)):
        if part in url:
            return route.fulfill(status=200, content_type="application/javascript", body=body)
    return route.abort()


def _draw_s(browser, html: str, runs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "view.html")
        path.write_text(html, encoding="utf-8")
        times = []
        for _ in range(runs):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.route("**/*", _local_cdn)
            start = time.perf_counter()
            page.goto(path.as_uri(), wait_until="load", timeout=300_000)
            page.wait_for_selector("#vis svg line", state="attached", timeout=300_000)
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            times.append(time.perf_counter() - start)
            page.close()
    return statistics.median(times)


def measure(quick: bool, tokens: int | None = None, warm: bool = True, model_draw: bool | None = None) -> dict:
    """tokens: the pair's length instead of quick's or the full one; warm=False: no warm-up draw; model_draw: draw
    the model view once (default: not under quick; the smoke draws it, so a model view that cannot draw fails)."""
    import torch
    from bertviz import head_view, model_view

    import models
    from bench.browser import chromium
    from viz.bertviz_offline import head_view_html, model_view_html, sentence_b_start

    n = tokens or (32 if quick else 128)
    n_a = (n - 3) // 2
    trace = models.shared("bert").attend(_words(n_a), _words(n - 3 - n_a, offset=n_a))
    assert len(trace.tokens) == n, len(trace.tokens)
    ours = {"head_view": head_view_html(trace), "model_view": model_view_html(trace)}
    attention = [torch.from_numpy(trace.weights[l][None]) for l in range(trace.n_layers)]  # (1, H, T, T) each
    b = sentence_b_start(trace)
    theirs = {"head_view": head_view(attention, trace.tokens, sentence_b_start=b, html_action="return").data,
              "model_view": model_view(attention, trace.tokens, sentence_b_start=b, html_action="return").data}
    single = models.shared("bert").attend(text_of(n))
    single_attention = [torch.from_numpy(single.weights[l][None]) for l in range(single.n_layers)]
    their_single = len(head_view(single_attention, single.tokens, html_action="return").data.encode())
    with chromium() as browser:
        if warm:
            _draw_s(browser, head_view_html(models.shared("bert").attend("warm up")), 1)
        head_s = _draw_s(browser, ours["head_view"], 1 if quick else 3)
        model_s = _draw_s(browser, ours["model_view"], 1) if (not quick if model_draw is None else model_draw) else None
        their_head_s = _draw_s(browser, theirs["head_view"], 1)
    size = {k: len(v.encode()) for k, v in ours.items()}
    their_size = {k: len(v.encode()) for k, v in theirs.items()}
    return {
        "tokens": n,
        "html_bytes": size,
        "bertviz_html_bytes": their_size,
        "bertviz_single_html_bytes": their_single,
        "size_ratio": {k: round(size[k] / their_size[k], 4) for k in size},
        "draw_s": {"head_view": round(head_s, 3), "model_view": None if model_s is None else round(model_s, 3)},
        "head_view_draw_vs_bertviz_14s": round(head_s / THEIR_DRAW_S, 3),
        "bertviz_draw_s": {"head_view": round(their_head_s, 3)},
        "head_view_draw_ratio": round(head_s / their_head_s, 3),
        "note": "bertviz's own page loads require.js, d3 and jQuery from a CDN, so offline it draws nothing; "
                "bertviz_draw_s answers those requests locally",
    }
