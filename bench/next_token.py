"""next_token: the Next token view's work on `gpt` with a 64-token prompt (the built-in Python-documentation corpus).

tokens: the prompt's length; step_ms: median milliseconds of one append-and-continue step (experiments.next_token
.extend: one token fed to the KV cache, then temperature / top-k / top-p and a seeded draw), steps 2 to 16, one
thread; decompose_ms: median of one logit lens + direct logit attribution (experiments.logit_lens) over the
prompts; max_abs_sum_error: the largest |Σ parts − logit| over 8 prompts × 4 targets (the top token and the next
three); max_abs_logit_error: the largest |decompose's logit − the model's plain forward logit| over the same.
The README says which CPU ran it. quick: 2 prompts, 8 steps.
"""
from __future__ import annotations

import statistics
import time

import torch

import models
from data.corpus import builtin
from experiments.logit_lens import decompose_ids
from experiments.next_token import Settings, extend

TOKENS = 64


def _prompts(gpt, n: int) -> list[torch.Tensor]:
    """n windows of TOKENS tokens from the built-in corpus, one after another."""
    ids = gpt.tokenizer(" ".join(builtin(4000).sentences), verbose=False)["input_ids"]
    return [torch.tensor([ids[i * TOKENS:(i + 1) * TOKENS]]) for i in range(n)]


def measure(quick: bool) -> dict:
    gpt = models.load("gpt")
    prompts, steps = _prompts(gpt, 2 if quick else 8), 8 if quick else 16
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        extend(gpt, prompts[0], 4, Settings(seed=0))  # warm-up
        step_ms = statistics.median(c.ms for ids in prompts[:2]
                                    for c in extend(gpt, ids, steps, Settings(temperature=0.8, top_k=50,
                                                                              top_p=0.95, seed=1))[1:])
        sum_err = logit_err = 0.0
        times = []
        for ids in prompts:
            with torch.no_grad():
                plain = gpt.model(input_ids=ids).logits[0, -1]  # (V,) the model's own, no extra outputs
            for target in plain.topk(4).indices.tolist():
                start = time.perf_counter()
                d = decompose_ids(gpt, ids, target)
                times.append(time.perf_counter() - start)
                sum_err = max(sum_err, abs(d.total - d.logit))
                logit_err = max(logit_err, abs(d.logit - float(plain[target])))
    finally:
        torch.set_num_threads(threads)
    return {"tokens": TOKENS, "step_ms": round(step_ms, 2), "decompose_ms": round(1000 * statistics.median(times), 1),
            "max_abs_sum_error": float(f"{sum_err:.2e}"), "max_abs_logit_error": float(f"{logit_err:.2e}")}
