"""flow_32: seconds for exact attention flow over 6 layers x 32 tokens, as the graph page runs it.

The input is the packaged MiniLM's attention (6 layers x 12 heads) for a fixed 32-token sentence,
heads fused by mean, residual 0.5 (the page's defaults). quick: the first 16 tokens of it.
Reports the median of a few runs, measured as wall-clock time in this process.
"""
from __future__ import annotations

import statistics
import time

SENTENCE = (
    "The quick brown fox jumps over the lazy dog near the river bank, while the children who were "
    "playing football in the park watched it with great surprise."
)  # 30 WordPiece tokens + [CLS] and [SEP]


def measure(quick: bool) -> dict:
    import models
    from analysis.flow import attention_flow

    trace = models.load("bert").attend(SENTENCE)
    weights = trace.weights[:, :, :16, :16] if quick else trace.weights  # (L, H, T, T)
    if quick:  # a sub-block is no longer row-stochastic; renormalise so it is still attention
        weights = weights / weights.sum(-1, keepdims=True)
    runs = []
    for _ in range(1 if quick else 3):
        start = time.perf_counter()
        attention_flow(weights, residual=0.5, fusion="mean")
        runs.append(time.perf_counter() - start)
    return {
        "seconds": round(statistics.median(runs), 3),
        "layers": int(weights.shape[0]),
        "tokens": int(weights.shape[2]),
        "input": "MiniLM-L6 attention, mean over heads, residual 0.5",
    }
