"""ERASER faithfulness (DeYoung et al. 2020) of attribution methods over rows, with curves, Kendall tau and heads.

    res = measure(model, [{"text": "the film was not good"}, ...], ("attention", "occlusion", "random"))
    res.summary -> {"attention": {"comprehensiveness": 0.12, "sufficiency": 0.30}, ...}

For each row the prediction is fixed on the whole text (experiments.explained), and each method ranks the
ordinary tokens (special tokens are never removed). At each fraction k the top ceil(k * n) of the n ordinary
tokens are deleted (not replaced), and
    comprehensiveness(k) = p(x) - p(x without the top k)    (high: the tokens it ranks first are needed)
    sufficiency(k)       = p(x) - p(only the top k)         (low: they suffice on their own)
with p the probability of the predicted class or next token (a similarity for MiniLM). Each is averaged over
the fractions (AOPC) and then over rows. Also: Kendall tau between every pair of methods (mean over rows), and
for every head the rank correlation (Spearman) of its attention row from the explained position with
integrated gradients (mean over rows), the "which heads agree with the gradients" map.
Does not: retrain (ROAR), or replace tokens by a mask: deletion, as ERASER.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from experiments.attribution_methods import attribute_all, kendall
from experiments.explained import explain
from limits.errors import UserError

FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.5)


@dataclass
class Faithfulness:
    methods: tuple[str, ...]
    fractions: tuple[float, ...]
    rows: int = 0                                  # rows measured
    skipped: list[str] = field(default_factory=list)   # why rows were left out (one sentence each)
    comp: dict = field(default_factory=dict)       # method -> [rows, fractions] comprehensiveness
    suff: dict = field(default_factory=dict)       # method -> [rows, fractions] sufficiency
    tau: dict = field(default_factory=dict)        # (method, method) -> [rows] Kendall tau
    heads: list = field(default_factory=list)      # [rows] of [L, H] Spearman of each head with IG
    ig_errors: list = field(default_factory=list)  # [rows] |delta| / |output - baseline output|

    @property
    def summary(self) -> dict[str, dict[str, float]]:
        return {m: {"comprehensiveness": float(np.mean(self.comp[m])), "sufficiency": float(np.mean(self.suff[m]))}
                for m in self.methods}

    def curves(self) -> dict[str, dict[str, list[float]]]:
        """method -> {"comprehensiveness": [per fraction], "sufficiency": [...]}, means over rows."""
        return {m: {"comprehensiveness": np.mean(self.comp[m], 0).tolist(),
                    "sufficiency": np.mean(self.suff[m], 0).tolist()} for m in self.methods}

    def tau_matrix(self) -> np.ndarray:
        """[M, M] mean Kendall tau between methods (1 on the diagonal)."""
        n = len(self.methods)
        out = np.eye(n)
        for i in range(n):
            for j in range(i + 1, n):
                out[i, j] = out[j, i] = float(np.mean(self.tau[self.methods[i], self.methods[j]]))
        return out

    def head_map(self) -> np.ndarray | None:
        """[L, H] mean Spearman correlation of each head's attention with integrated gradients, or None."""
        return np.mean(self.heads, 0) if self.heads else None


def top(scores: np.ndarray, special: np.ndarray, fraction: float) -> np.ndarray:
    """Indices of the top ceil(fraction * n) ordinary tokens by score (ties: earlier first).
    ([0, .9, .1, .5, 0], special [1, 0, 0, 0, 1], 0.5) -> [1, 3]"""
    places = np.flatnonzero(~special)
    k = min(len(places), max(1, int(np.ceil(fraction * len(places) - 1e-9))))
    order = places[np.argsort(-scores[places], kind="stable")]
    return np.sort(order[:k])


def erasure(ex, scores: np.ndarray, fractions, p_full: float) -> tuple[np.ndarray, np.ndarray]:
    """(comprehensiveness, sufficiency) at each fraction for one method's scores on one explained text."""
    n = len(ex.tokens)
    removed = [top(scores, ex.special, f) for f in fractions]
    without = [np.setdiff1d(np.arange(n), r) for r in removed]
    only = [np.union1d(np.flatnonzero(ex.special), r) for r in removed]
    vals = ex.values(without + only, prob=True)                                  # (2F,)
    k = len(fractions)
    return p_full - vals[:k], p_full - vals[k:]


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(spearmanr(a, b).statistic)


def measure_row(res: Faithfulness, model, row: dict, steps: int, baseline: str, with_heads: bool,
                flow_tokens: int | None = None) -> None:
    """Add one row's erasure scores, taus and head correlations to res (ValueError: the row cannot be used)."""
    ex = explain(model, row["text"], None, row.get("text_b"))
    if "flow" in res.methods and flow_tokens is not None and len(ex.tokens) > flow_tokens:
        raise UserError(f"{len(ex.tokens)} tokens, over the {flow_tokens} up to which exact flow is computed.")
    asked = tuple(dict.fromkeys(res.methods + (("integrated_gradients",) if with_heads else ())))
    score_row(res, ex, attribute_all(ex, asked, steps, baseline), with_heads)


def score_row(res: Faithfulness, ex, atts: dict, with_heads: bool = False) -> None:
    """Add the erasure scores, taus (and head correlations) of one explained row whose attributions are already
    computed (atts: every method of res, and integrated gradients when with_heads)."""
    p_full = float(ex.values([np.arange(len(ex.tokens))], prob=True)[0])
    ordinary = ~ex.special
    for m in res.methods:
        c, s = erasure(ex, atts[m].scores, res.fractions, p_full)
        res.comp.setdefault(m, []).append(c)
        res.suff.setdefault(m, []).append(s)
    for i, a in enumerate(res.methods):
        for b in res.methods[i + 1:]:
            res.tau.setdefault((a, b), []).append(kendall(atts[a].scores[ordinary], atts[b].scores[ordinary]))
    ig = atts.get("integrated_gradients")
    if ig is not None:
        res.ig_errors.append(abs(ig.delta) / max(abs(ig.output - ig.baseline_output), 1e-12))
    if with_heads:
        rows = ex.attention()[:, :, ex.source][..., ordinary]                    # (L, H, n)
        target = ig.scores[ordinary]
        res.heads.append(np.array([[_spearman(r, target) for r in layer] for layer in rows]))
    res.rows += 1


def measure(model, rows: list, methods, fractions=FRACTIONS, steps: int = 64, baseline: str = "pad",
            heads: bool = True, progress: Callable[[float, str], None] | None = None,
            flow_tokens: int | None = None) -> Faithfulness:
    """Faithfulness over rows (each a text, or a dict with "text" and optional "text_b"); rows that cannot be
    explained (e.g. one token, or over flow_tokens when flow is asked for) are skipped with their reason.
    ValueError when no row is left."""
    res = Faithfulness(tuple(methods), tuple(float(f) for f in fractions))
    if not res.methods:
        raise UserError("Choose at least one method to measure.")
    if not all(0 < f <= 1 for f in res.fractions):
        raise UserError("Fractions of tokens to remove lie in (0, 1].")
    for i, row in enumerate(rows):
        if progress is not None:
            progress(i / max(len(rows), 1), f"row {i + 1} of {len(rows)}")
        row = {"text": row} if isinstance(row, str) else row
        try:
            measure_row(res, model, row, steps, baseline, heads, flow_tokens)
        except ValueError as err:
            res.skipped.append(f"Row {i + 1}: {err}")
    if not res.rows:
        raise UserError("None of these rows could be explained" + (f" ({res.skipped[0]})" if res.skipped else "")
                        + ": give rows with a text of at least two tokens.")
    return res
