"""long_text_160: how long each view takes to paint a 120-word paragraph (about 160 tokens) in Chromium.

For every view of app.py: a new page opens /<view>?text=<paragraph> on a server whose models are already
loaded (each view is visited once first, so model loads and first-use caches are not counted), and the
clock runs until the app's run has ended and every element is drawn (no placeholder left). Reported per
view in seconds, with the slowest. Pruning uses the tiny decoder (scoring BERT's heads is its own figure,
pruning_bert). It does not measure the first visit, which includes loading a model (see cold_start).
"""
from __future__ import annotations

import time
from urllib.parse import urlencode

from bench.browser import chromium, new_page, serve, views, visit

PARAGRAPH = (
    "Attention lets every word in a sentence look at every other word and decide how much of each to take. In a "
    "transformer, a layer holds several heads, and each head learns its own way of looking: one follows the word "
    "just before, another jumps to the end of the sentence, a third gathers the whole context evenly. Teachers "
    "like to show a class the pronoun that finds its noun, because it looks like understanding, yet the same head "
    "may simply prefer the subject. When the text grows long, the pictures grow dense, and a good tool must still "
    "answer quickly, label what it can and say plainly what it leaves out. This paragraph has about one hundred and "
    "twenty words, enough to test that promise on every view.")


def measure(quick: bool) -> dict:
    stems = [path.removeprefix("views/").removesuffix(".py") for path, _, _ in views()]
    if quick:
        stems = [s for s in stems if s in ("heads", "inside_head", "graph")]
    seconds = {}
    with serve() as url, chromium() as browser:
        for stem in stems:
            params = {"text": PARAGRAPH} | ({"model": "tiny"} if stem == "pruning" else {})
            address = f"{url}/{'' if stem == 'home' else stem}?{urlencode(params)}"
            warm = new_page(browser)
            visit(warm, address, timeout_s=300)
            warm.close()
            page = new_page(browser)
            start = time.perf_counter()
            visit(page, address, timeout_s=300)
            seconds[stem] = round(time.perf_counter() - start, 2)
            page.close()
    slowest = max(seconds, key=seconds.get)
    return {"tokens": 154, "seconds": seconds, "slowest": slowest, "slowest_s": seconds[slowest]}
