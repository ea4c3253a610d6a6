"""flow_32 and flow_64: seconds for exact attention flow over 6 layers x 32 or 64 tokens, as the graph page runs it.

The input is the packaged MiniLM's attention (6 layers x 12 heads) for a fixed sentence written as exactly
32 or 64 WordPiece tokens, heads fused by mean, residual 0.5 (the page's defaults), one worker thread.
seconds: median wall-clock time of a few runs in this process (the compiled solver already loaded);
cpu_seconds: the process CPU time of the same runs, which a busy shared machine inflates less.
quick: 16 tokens.
"""
from __future__ import annotations

import statistics
import time


def _measure(n_tokens: int, quick: bool) -> dict:
    import models
    from analysis.flow import attention_flow
    from bench.heads import text_of

    n = 16 if quick else n_tokens
    weights = models.load("bert").attend(text_of(n)).weights  # (L, H, T, T)
    attention_flow(weights[:, :, :4, :4])  # loads (or compiles, first time on a machine) the solver
    wall, cpu = [], []
    for _ in range(1 if quick else 3):
        start, start_cpu = time.perf_counter(), time.process_time()
        attention_flow(weights, residual=0.5, fusion="mean")
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"seconds": round(statistics.median(wall), 3), "cpu_seconds": round(statistics.median(cpu), 3),
            "layers": int(weights.shape[0]), "tokens": int(weights.shape[2]),
            "input": "MiniLM-L6 attention, mean over heads, residual 0.5"}


def measure(quick: bool) -> dict:
    return _measure(32, quick)


def measure_64(quick: bool) -> dict:
    return _measure(64, quick)
