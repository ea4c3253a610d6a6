"""flow_32, flow_64, flow_128: seconds for exact attention flow over 6 layers x 32, 64 or 128 tokens.

The input is the packaged MiniLM's attention (6 layers x 12 heads) for a fixed sentence written as exactly
32 or 64 WordPiece tokens, heads fused by mean, residual 0.5 (the page's defaults), one worker thread.
seconds: median wall-clock time of a few runs in this process (the compiled solver already loaded);
cpu_seconds: the process CPU time of the same runs, which a busy shared machine inflates less.
flow_128 also times the previous solver (analysis.flow.dinic_flow_values, general Dinic per problem) on the same
input and reports max_abs_diff, the largest difference between the two (0 up to rounding: a maximum flow is
unique); seconds is the best of three runs on min(2, CPUs) threads, as the graph page runs it on a laptop, and
seconds_1_thread the best of three on one thread (hosted mode).
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
    attention_flow(weights[:, :, :4, :4], workers=1)  # loads (or compiles, first time on a machine) the solver
    wall, cpu = [], []
    for _ in range(1 if quick else 3):
        start, start_cpu = time.perf_counter(), time.process_time()
        attention_flow(weights, residual=0.5, fusion="mean", workers=1)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"seconds": round(statistics.median(wall), 3), "cpu_seconds": round(statistics.median(cpu), 3),
            "layers": int(weights.shape[0]), "tokens": int(weights.shape[2]),
            "input": "MiniLM-L6 attention, mean over heads, residual 0.5"}


def measure(quick: bool) -> dict:
    return _measure(32, quick)


def measure_64(quick: bool) -> dict:
    return _measure(64, quick)


def measure_128(quick: bool) -> dict:
    import os

    import models
    from analysis.flow import dinic_flow_values, max_flow_values
    from analysis.rollout import residual_attention
    from bench.heads import text_of

    n = 16 if quick else 128
    a_hat = residual_attention(models.load("bert").attend(text_of(n)).weights, 0.5, "mean")  # (L, T, T)
    max_flow_values(a_hat[:, :4, :4], workers=1)  # loads (or compiles) both solvers
    dinic_flow_values(a_hat[:, :4, :4])
    workers = min(2, os.cpu_count() or 1)

    def best(fn, **kw) -> tuple[float, float, object]:
        wall, cpu, out = [], [], None
        for _ in range(1 if quick else 3):
            start, start_cpu = time.perf_counter(), time.process_time()
            out = fn(a_hat, **kw)
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        return min(wall), min(cpu), out

    seconds, _, new = best(max_flow_values, workers=workers)
    one, one_cpu, _ = best(max_flow_values, workers=1)
    ref, _, old = best(dinic_flow_values)
    return {"seconds": round(seconds, 3), "max_abs_diff": float(abs(new - old).max()), "threads": workers,
            "seconds_1_thread": round(one, 3), "cpu_seconds_1_thread": round(one_cpu, 3),
            "reference_seconds_1_thread": round(ref, 3), "layers": int(a_hat.shape[0]), "tokens": n,
            "load_1m": round(os.getloadavg()[0], 1),
            "input": "MiniLM-L6 attention, mean over heads, residual 0.5"}
