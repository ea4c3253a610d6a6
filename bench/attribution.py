"""attribution: ERASER faithfulness of every method on the packaged MiniLM's paraphrase pairs (the pruning view's
built-in MiniLM task): the cosine similarity of each sentence to its paraphrase is explained.

rows: pairs measured (quick: 10). seconds: attributing with every method and erasing, all rows, after one warm-up
text. methods: {name: {comprehensiveness, sufficiency}}, AOPC over deleting / keeping only the top 1, 5, 10, 20,
50 % of ordinary tokens, means over rows (drop in cosine similarity). ig_completeness_error: the largest over rows
of |sum of IG scores - (output - baseline output)| / |output - baseline output| at the default 64 steps (pad
baseline); ig_completeness_error_median: its median. one_text_s: every method (best head included) on one
sentence pair, median of 3, after a warm-up. cpu and threads: where it ran.
"""
from __future__ import annotations

import platform
import statistics
import time

import numpy as np
import torch


def measure(quick: bool, pairs: int | None = None, steps: int = 64, warm: bool = True, shortest: bool = False) -> dict:
    """pairs: how many paraphrase pairs (default 120, quick 10; given, one_text_s is one run); steps: integrated
    gradients' steps, on the rows and the one text; warm=False: no warm-up text first; shortest: the pairs with the
    fewest words instead of the first ones, the same code on fewer tokens (the smoke's sizes)."""
    from data.paraphrases import load_pairs
    from experiments.attribution import ALL_METHODS, METHODS
    from experiments.attribution_methods import attribute_all
    from experiments.explained import explain
    from experiments.faithfulness import measure as faithfulness
    from models import shared

    model = shared("bert")  # the smoke holds one for every entry; a full run loads it here
    every = load_pairs()
    if shortest:
        every = sorted(every, key=lambda pair: len(" ".join(pair).split()))
    chosen = every[: pairs or (10 if quick else 120)]
    rows = [{"text": a, "text_b": b} for a, b in chosen]
    a, b = chosen[0]
    if warm:
        attribute_all(explain(model, a, None, b), ALL_METHODS)  # warm-up: the flow solver compiles on first use
    times = []
    for _ in range(1 if pairs else 3):
        start = time.perf_counter()
        attribute_all(explain(model, a, None, b), ALL_METHODS, steps)
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    res = faithfulness(model, rows, METHODS, steps=steps, heads=False)
    seconds = time.perf_counter() - start
    errors = np.array(res.ig_errors)
    return {
        "rows": res.rows,
        "steps": steps,
        "seconds": round(seconds, 2),
        "ig_completeness_error": float(f"{errors.max():.3g}"),
        "ig_completeness_error_median": float(f"{np.median(errors):.3g}"),
        "methods": {m: {k: round(v, 4) for k, v in s.items()} for m, s in res.summary.items()},
        "one_text_s": round(statistics.median(times), 3),
        "cpu": torch.backends.cpu.get_cpu_capability() + " " + (platform.processor() or platform.machine()),
        "threads": torch.get_num_threads(),
    }
