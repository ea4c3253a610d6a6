"""Which heads matter: gradient importance, a loss-free score, and the pruning curve.

Gradient importance (Michel, Levy & Neubig 2019): with every head's output scaled by a gate ξ_h
(models.gates) held at 1, I_h = mean over input batches of |∂L/∂ξ_h|, then l2-normalised within
each layer so layers compare. Loss-free confidence (after Voita et al. 2019): the mean over
tokens of a head's largest attention weight.
The pruning curve removes heads globally, least important first (or random, or most important
first), in 10 % steps, and records the task metric with those heads gated off.
Re-estimating importance while pruning (Michel et al.'s iterative plan) is experiments.prune_plan; nothing here
fine-tunes between steps.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from models.gates import gated, head_counts, mask

Progress = Callable[[float], None] | None


def gradient_importance(model, loss_fn: Callable, batches: Sequence, normalise: bool = True,
                        progress: Progress = None, at: dict | None = None) -> np.ndarray:
    """I [L, H]: mean over batches of |∂ loss_fn(model, batch) / ∂ξ| at ξ = 1, rows l2-normalised.

    at: a plan {layer: [heads]} whose heads sit at ξ = 0 meanwhile (re-scoring while pruning iteratively);
    their own scores are still returned. Layers with fewer heads than the widest are padded with 0."""
    counts = head_counts(model)
    total = torch.zeros(len(counts), max(counts), dtype=torch.float64)   # (L, H)
    start = mask(counts, at, torch.float64)
    for i, batch in enumerate(batches):
        gates = [g.clone().requires_grad_(True) for g in start]
        with gated(model, gates):
            loss = loss_fn(model, batch)
        grads = torch.autograd.grad(loss, gates)
        for layer, g in enumerate(grads):
            total[layer, :len(g)] += g.abs()
        if progress:
            progress((i + 1) / len(batches))
    importance = (total / len(batches)).numpy()
    if normalise:
        importance = importance / np.maximum(np.linalg.norm(importance, axis=1, keepdims=True), 1e-20)
    return importance


def confidence(attentions: Sequence[np.ndarray]) -> np.ndarray:
    """Mean over sentences and query tokens of each head's largest weight: list of [L, H, T, T] -> [L, H]."""
    return np.mean([a.max(-1).mean(-1) for a in attentions], axis=0)


def order(importance: np.ndarray) -> list[tuple[int, int]]:
    """Heads from least to most important (ties by position); non-finite entries (past a layer's heads) left out.
    [[.3, .1], [.2, .9]] -> [(0,1), (1,0), (0,0), (1,1)]"""
    flat = np.argsort(importance.ravel(), kind="stable")
    return [tuple(int(v) for v in divmod(int(i), importance.shape[1])) for i in flat
            if np.isfinite(importance.ravel()[i])]


def plan_of(heads: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
    """[(0, 1), (2, 0), (0, 3)] -> {0: [1, 3], 2: [0]}"""
    plan: dict[int, list[int]] = {}
    for layer, h in heads:
        plan.setdefault(int(layer), []).append(int(h))
    return {k: sorted(v) for k, v in plan.items()}


def first(ranked: Sequence[tuple[int, int]], fraction: float) -> dict[int, list[int]]:
    """The plan removing round(fraction × all heads) heads from the front of `ranked`."""
    return plan_of(ranked[:int(round(fraction * len(ranked)))])


def pruning_curve(metric: Callable[[dict], float], importance: np.ndarray, seeds: int = 3,
                  steps: int = 10, progress: Progress = None) -> dict:
    """Metric vs fraction of heads removed: by importance, reverse, and `seeds` random orders.

    metric(plan) -> float evaluates the model with plan's heads off. The fractions are those of whole heads nearest
    `steps` + 1 even steps, each once: a model of 4 heads gets 0, 25, 50, 75 and 100 %, never a fraction no plan
    removes. Returns fractions [S], importance, reverse [S], random [seeds, S], random_mean, random_std (S ≤ steps + 1).
    """
    ranked = order(importance)
    counts = sorted({int(round(f * len(ranked))) for f in np.linspace(0, 1, steps + 1)})  # heads removed
    fractions = np.array(counts) / len(ranked)
    orders = [ranked, ranked[::-1]]
    for seed in range(seeds):
        perm = np.random.default_rng(seed).permutation(len(ranked))
        orders.append([ranked[i] for i in perm])
    seen: dict[str, float] = {}  # 0 % and 100 % are the same plan for every order: run the model once

    def measured(plan: dict) -> float:
        key = repr(sorted(plan.items()))
        if key not in seen:
            seen[key] = metric(plan)
        return seen[key]

    rows = []
    for i, ranking in enumerate(orders):
        rows.append([measured(plan_of(ranking[:count])) for count in counts])
        if progress:
            progress((i + 1) / len(orders))
    rand = np.array(rows[2:])
    return {
        "fractions": fractions,
        "importance": np.array(rows[0]),
        "reverse": np.array(rows[1]),
        "random": rand,
        "random_mean": rand.mean(0),
        "random_std": rand.std(0),
    }


def gated_metric(model, metric_fn: Callable) -> Callable[[dict], float]:
    """metric(plan): metric_fn(model) evaluated with plan's heads gated to 0, without gradients."""
    counts = head_counts(model)

    def metric(plan: dict) -> float:
        with torch.no_grad(), gated(model, mask(counts, plan)):
            return float(metric_fn(model))
    return metric


def measures_note(grad: np.ndarray) -> str:
    """Why the gradient colour and the cost of switching a head off rank heads differently, naming the steepest head
    of grad [L, H] (inf where a layer has fewer heads)."""
    layer, head = np.unravel_index(np.argmax(np.where(np.isfinite(grad), grad, -np.inf)), grad.shape)
    return (f"Why the colour and the metric can disagree: gradient importance is the loss's slope when a head is "
            f"dimmed a little from full strength, averaged over examples (steepest here: L{layer} H{head}). "
            "Switching a head off is a step all the way to 0, far from where that slope was measured, and the "
            "metric counts answers that flip, not loss. A head the later layers depend on entirely can have a "
            "gentle slope at full strength and still cost the most when removed: judge by the metric, and use the "
            "colour to choose what to try first.")
