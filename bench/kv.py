"""kv_512: generating 512 tokens with the default decoder (models/decoder.py), with and without the KV cache.

cached_s / uncached_s: total seconds of the 512 greedy steps (a prompt of 16 random tokens included in
the first step); max_abs_logit_diff: the largest difference between the two runs' logits;
late_over_early: the cached run's median step time over its last 100 steps divided by that of steps
10-110 (1.0 = flat). Cached runs are repeated 3 times: cached_s is their median total and the ratio
uses each step's median over the repeats. Runs on one thread: a single-token step is too small to
split, and one thread keeps timings steadier on a shared machine; both runs get the same. The bench
sets the thread count for its own process only (the app never changes it).
load_1m is the machine's load average when it finished, to read the timings by. quick: 64 tokens.
"""
from __future__ import annotations

import os
import statistics

import torch

from analysis.kv import late_over_early
from experiments.kv_cache import compare, generate
from models.decoder import DecoderConfig, build, prompt


def measure(quick: bool, tokens: int | None = None, warm: bool = True) -> dict:
    """tokens: generate this many instead of quick's or the full count; warm=False: no warm-up run (the smoke's)."""
    n, repeats = (64, 1) if quick else (512, 3)
    n = tokens or n
    cfg = DecoderConfig()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        idx = prompt(cfg)  # (1, 16)
        net = build(cfg, total_len=idx.shape[1] + n)
        if warm:
            generate(net, idx, 16, use_cache=True)  # warm-up: first calls allocate and pick kernels
        cached = [generate(net, idx, n, use_cache=True) for _ in range(repeats)]
        uncached = generate(net, idx, n, use_cache=False)
    finally:
        torch.set_num_threads(threads)
    r = compare(cached[0], uncached)
    steady = [statistics.median(step) for step in zip(*(c.seconds for c in cached))]  # (n,) one burst hits one run
    cached_s = statistics.median(sum(c.seconds) for c in cached)
    return {
        "cached_s": round(cached_s, 3), "uncached_s": round(r["uncached_s"], 3),
        "max_abs_logit_diff": float(f"{r['max_abs_logit_diff']:.3g}"),
        "late_over_early": round(late_over_early(steady), 3),
        "speedup": round(r["uncached_s"] / cached_s, 1), "same_tokens": r["same_tokens"], "tokens": n,
        "config": f"{cfg.layers} layers, d_model {cfg.d_model}, {cfg.heads} heads, {cfg.kv_heads} kv heads, "
                  f"{cfg.dtype}, cpu, one thread",
        "load_1m": round(os.getloadavg()[0], 1),
    }
