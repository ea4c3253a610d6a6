"""A pruning plan in the manner of Michel, Levy & Neubig (2019), as HF's bertology script ran it, and the curve
that judges it against other orders.

Iterative: score the heads (gradient importance, l2-normalised per layer and, optionally, min-max over all
heads), gate off the `step` share of all heads that scores lowest among those still on, measure the metric,
re-score with those heads off, and repeat. The plan is the last step whose metric kept at least `keep` of
the original (bertology's masking_threshold): the first step below it stops the plan, though the curve may go
on to every head removed. One-pass ranks once, from the first scores. Reverse and random orders (several seeds)
remove the same numbers of heads. The recommended plan is whichever of iterative and one-pass removes more
heads above the threshold (more metric kept on a tie).
Knows nothing of models: score(plan) and metric(plan) are the caller's. Does not fine-tune between steps.

    sizes(72, 0.1) -> [0, 7, 14, ..., 70, 72]
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from experiments.importance import order, plan_of
from limits.errors import UserError

Progress = Callable[[float, str], None] | None


def sizes(n_heads: int, step: float) -> list[int]:
    """Heads removed at each step: multiples of max(1, round(step × n)), then all of them."""
    k = max(1, int(round(step * n_heads)))
    return sorted(set(range(0, n_heads, k)) | {n_heads})


def normalised(raw: np.ndarray, counts: list[int], global_norm: bool = False) -> np.ndarray:
    """Per-layer l2 normalisation (bertology's exponent 2), then optionally min-max over every real head
    (a monotone map: it changes the colours, never the order). Padding past a layer's heads stays +inf."""
    imp = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-20)
    real = np.arange(imp.shape[1])[None, :] < np.array(counts)[:, None]                # (L, H)
    if global_norm:
        lo, hi = imp[real].min(), imp[real].max()
        imp = (imp - lo) / (hi - lo if hi > lo else 1.0)
    return np.where(real, imp, np.inf)


@dataclass
class Plan:
    counts: list[int]                       # heads per layer of the model planned for
    sizes: list[int]                        # heads removed at each point of the curve
    base: float                             # the metric with every head on
    threshold: float                        # the metric a plan must keep (keep × base, or base / keep)
    importance: np.ndarray                  # the first scores [L, H] (inf past a layer's heads)
    iterative: list[float]                  # metric after each iterative step (at `sizes`)
    iterative_plans: list[dict]
    one_pass: list[float]
    reverse: list[float]
    random: np.ndarray                      # [seeds, len(sizes)]
    stop: int                               # index in sizes of the iterative plan (its last step above)
    recommended: str                        # "iterative" or "one-pass"
    plan: dict = field(default_factory=dict)  # the recommended plan {layer: [heads]}
    value: float = 0.0                      # its metric

    def table(self) -> list[dict]:
        """One row per point: heads removed, % removed, and each order's metric."""
        n = sum(self.counts)
        return [{"removed": s, "% removed": round(100 * s / n, 1), "iterative": self.iterative[i],
                 "one-pass": self.one_pass[i], "reverse": self.reverse[i],
                 "random mean": float(self.random[:, i].mean()), "random std": float(self.random[:, i].std())}
                for i, s in enumerate(self.sizes)]


def _ranked(imp: np.ndarray, off: set) -> list[tuple[int, int]]:
    """Heads still on, least important first (ties by position); padding (inf) never appears."""
    return [h for h in order(imp) if h not in off and np.isfinite(imp[h])]


def plan(score: Callable[[dict], np.ndarray], metric: Callable[[dict], float], counts: list[int],
         step: float = 0.1, keep: float = 0.9, higher_better: bool = True, seeds: int = 3, full: bool = True,
         global_norm: bool = False, progress: Progress = None) -> Plan:
    """Run the iterative plan and the comparison orders. score(plan) -> raw |∂L/∂ξ| [L, H] with plan's heads
    off; metric(plan) -> float. full=False stops the iterative run at the threshold (no curve past it)."""
    if not 0 < keep <= 1 or not 0 < step < 1:
        raise UserError(f"Keep must be a share in (0, 1] and the step in (0, 1); got keep {keep}, step {step}.")
    n, points = sum(counts), sizes(sum(counts), step)
    seen: dict[str, float] = {}

    def measured(p: dict) -> float:
        key = repr(sorted(p.items()))
        if key not in seen:
            seen[key] = metric(p)
        return seen[key]

    total = 2 * len(points) + (len(points) - 2) * (2 + seeds)
    done = [0]

    def tick(what: str) -> None:
        done[0] += 1
        if progress:
            progress(min(done[0] / total, 1.0), what)

    base = measured({})
    threshold = keep * base if higher_better else base / keep
    above = (lambda v: v >= threshold) if higher_better else (lambda v: v <= threshold)
    first = normalised(score({}), counts, global_norm)
    tick("Scored every head")
    off: list[tuple[int, int]] = []
    values, plans, stop, stopped = [base], [{}], 0, False
    for target in points[1:]:
        imp = first if not off else normalised(score(plan_of(off)), counts, global_norm)
        off = off + _ranked(imp, set(off))[:target - len(off)]
        values.append(measured(plan_of(off)))
        plans.append(plan_of(off))
        tick(f"Iterative step: {len(off)} of {n} heads off")
        if not stopped and above(values[-1]):
            stop = len(values) - 1
        stopped = stopped or not above(values[-1])
        if stopped and not full:
            break
    points = points[:len(values)]
    ranked = _ranked(first, set())
    orders = {"one-pass": ranked, "reverse": ranked[::-1]}
    for s in range(seeds):
        orders[f"random {s}"] = [ranked[i] for i in np.random.default_rng(s).permutation(n)]
    curves = {}
    for name, ranking in orders.items():
        curves[name] = []
        for size in points:
            curves[name].append(measured(plan_of(ranking[:size])))
            if 0 < size < n:
                tick(f"Order {name}: {size} heads off")
    one_pass = curves["one-pass"]
    op_stop = next((i - 1 for i, v in enumerate(one_pass) if not above(v)), len(points) - 1)
    sign = 1 if higher_better else -1
    use_it = (points[stop], sign * values[stop]) >= (points[op_stop], sign * one_pass[op_stop])
    return Plan(counts=list(counts), sizes=points, base=base, threshold=threshold, importance=first,
                iterative=values, iterative_plans=plans, one_pass=one_pass, reverse=curves["reverse"],
                random=np.array([curves[f"random {s}"] for s in range(seeds)]), stop=stop,
                recommended="iterative" if use_it else "one-pass",
                plan=plans[stop] if use_it else plan_of(ranked[:points[op_stop]]),
                value=values[stop] if use_it else one_pass[op_stop])


def work(n_heads: int, step: float, seeds: int) -> tuple[int, int]:
    """(scorings, metric runs) plan() may need at most: what a budget is counted from."""
    points = len(sizes(n_heads, step))
    return points - 1, 1 + (points - 1) + (points - 2) * (2 + seeds)
