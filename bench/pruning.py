"""pruning_bert: what removing MiniLM's heads costs on the built-in paraphrase task, and what it buys.

metric = retrieval accuracy on held-out pairs (experiments.paraphrase: each paraphrase against every
other pair's and against scrambled copies). Importance = Michel et al. gradient importance on the
disjoint scoring pairs. metric_40_*: 40 % of the 72 heads gated off, least important first or in
random orders (mean over seeds). pruned_vs_gated_max_diff: largest |difference| of last hidden
states between the model pruned by slicing at 50 % and the gated one, both in float64 (so it is the
slicing's error, not float32 summation order's, which moves with the thread count). speedup_50_batch16: forward
time of the full over the 50 %-pruned model at batch 16 (fastest of interleaved runs in this process; on CPU
with one thread). quick: fewer pairs, seeds and runs.
"""
from __future__ import annotations

import numpy as np
import torch


def measure(quick: bool, device: str = "cpu", sizes: tuple[int, int, int] | None = None, repeats: int | None = None,
            texts: int = 16) -> dict:
    """sizes: (scoring pairs, held-out pairs, random seeds) and repeats (timed runs) instead of quick's or the full
    ones; texts: the sentences the float64 gap and the timing read (16; the smoke's fewer, repeated to batch 16)."""
    from experiments import paraphrase
    from experiments.importance import first, gradient_importance, order
    from experiments.pruning import float64_gap, speed
    from models.hf import load
    from models.prune import pruned_copy

    enc = load("bert", device)
    n_score, n_eval, seeds = sizes or ((16, 30, 2) if quick else (40, 80, 5))
    batches, held = paraphrase.task(enc.tokenizer, n_score, n_eval, device=enc.device)
    metric = paraphrase.held_out_metric(enc.model, enc.tokenizer, n_eval, enc.device)
    ranked = order(gradient_importance(enc.model, paraphrase.loss, batches))
    random = [metric(first([ranked[i] for i in np.random.default_rng(s).permutation(len(ranked))], 0.4))
              for s in range(seeds)]
    plan = first(ranked, 0.5)
    pruned = pruned_copy(enc.model, plan)
    gap = float64_gap(enc.model, pruned, plan, enc.tokenizer, [a for a, _ in paraphrase.load_pairs()[:texts]])
    threads = torch.get_num_threads()
    if enc.device == "cpu":  # one thread: on a shared machine, waiting for a second core swamps the difference
        torch.set_num_threads(1)
    try:
        rows = speed(enc.model, pruned, enc.tokenizer, [a for a, _ in paraphrase.load_pairs()[:texts]],
                     repeats=repeats or (3 if quick else 15))
    finally:
        torch.set_num_threads(threads)
    return {
        "metric_full": round(metric({}), 4),
        "metric_40_importance": round(metric(first(ranked, 0.4)), 4),
        "metric_40_random": round(float(np.mean(random)), 4),
        "metric_40_random_std": round(float(np.std(random)), 4),
        "metric_40_reverse": round(metric(first(ranked[::-1], 0.4)), 4),
        "pruned_vs_gated_max_diff": float(f"{gap:.2e}"),
        "speedup_50_batch1": round(rows[0]["speedup"], 3),
        "speedup_50_batch16": round(rows[1]["speedup"], 3),
        "input": f"MiniLM-L6 on {enc.device}{' (1 thread for timing)' if enc.device == 'cpu' else ''}, "
                 f"importance from {n_score} pairs, accuracy on {n_eval} held-out pairs with scrambled "
                 f"distractors, {seeds} random seeds",
    }
