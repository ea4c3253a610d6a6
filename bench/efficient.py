"""sparse_attention and tiled_attention: what skipping pairs and tiling cost and save, measured.

sparse_attention: for "dense" (eager softmax(QK^T)V), "sliding_window" (w = 128 each side) and
"block_sparse" (64-token blocks, one block each side), seconds and peak bytes at n = 1024 and 8192 and
the log-log slope of seconds against n fitted from n = 1024 up, over n = 256 ... 16384 (quick: 256,
1024, 2048, 8192), with peak_slope the same fit of peak bytes. tiled_attention: the largest |tiled -
SDPA| over causal and non-causal inputs of odd and block-multiple lengths, and the peak bytes of dense
eager and tiled attention at n = 8192. One head of 64 dimensions, float32, one CPU thread; each point
in a fresh process, peak memory read from the kernel's high-water mark (experiments.attention_cost
says how). load_1m is the machine's load average when it finished, to read the timings by.
"""
from __future__ import annotations

import contextlib
import os

import torch
import torch.nn.functional as F

from analysis.efficient import tiled_attention
from experiments.attention_cost import SIZES, Runner, curves, slope

QUICK = (256, 1024, 2048, 8192)
SHOWN = (1024, 8192)
_RUNNER: list[Runner] = []  # inside shared_runner(): the one Runner both entries measure on


@contextlib.contextmanager
def shared_runner():
    """While open, sparse and tiled measure on one Runner (two fork servers, a torch import each) instead of one
    each: `python -m bench --smoke` opens it; the points are still each measured in a fresh fork."""
    with Runner() as runner:
        _RUNNER.append(runner)
        try:
            yield
        finally:
            _RUNNER.clear()


def sparse(quick: bool, sizes: tuple[int, ...] | None = None, repeats: int | None = None) -> dict:
    """sizes: the n measured (default SIZES, quick QUICK); seconds and peak_bytes are shown at those of SHOWN.
    repeats: timed calls per point (the best counts) instead of experiments.attention_cost's REPEATS."""
    sizes = sizes or (QUICK if quick else SIZES)
    data = curves(("dense", "sliding_window", "block_sparse"), sizes, **({"repeats": repeats} if repeats else {}),
                  runner=_RUNNER[0] if _RUNNER else None)
    out = {}
    for method, points in data.items():
        ns = sorted(points)
        out[method] = {
            "seconds": {str(n): float(f"{points[n]['seconds']:.4g}") for n in SHOWN if n in points},
            "peak_bytes": {str(n): points[n]["peak_bytes"] for n in SHOWN if n in points},
            "slope": round(slope(ns, [points[n]["seconds"] for n in ns]), 2),
            "peak_slope": round(slope(ns, [points[n]["peak_bytes"] for n in ns]), 2),
        }
    out["sizes"] = list(sizes)
    out["load_1m"] = round(os.getloadavg()[0], 1)
    return out


def max_abs_diff(quick: bool, lengths: tuple[int, ...] | None = None) -> float:
    """max |tiled_attention - SDPA| over causal and not, lengths below, at and off the block size."""
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for T in lengths or ((1, 63, 64, 65, 1000) if quick else (1, 63, 64, 65, 1000, 1024, 4099)):
        q, k, v = (torch.randn(1, 2, T, 64, generator=gen) for _ in range(3))
        for causal in (False, True):
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            worst = max(worst, float((tiled_attention(q, k, v, causal=causal) - ref).abs().max()))
    return worst


def tiled(quick: bool, n: int = 8192, lengths: tuple[int, ...] | None = None) -> dict:
    """n: the length whose peak bytes are compared (the keys name it); lengths: those max_abs_diff compares at
    instead of quick's or the full ones (the smoke's)."""
    with torch.no_grad():
        diff = max_abs_diff(quick, lengths)
    with contextlib.nullcontext(_RUNNER[0]) if _RUNNER else Runner() as runner:
        dense, ours = runner.measure("dense", n), runner.measure("tiled", n)
    return {"max_abs_diff": float(f"{diff:.3g}"), f"peak_bytes_dense_{n}": dense["peak_bytes"],
            f"peak_bytes_tiled_{n}": ours["peak_bytes"],
            "tiled_over_dense": round(ours["peak_bytes"] / dense["peak_bytes"], 4),
            "load_1m": round(os.getloadavg()[0], 1)}
