"""Does attention explain the output? Attributions of one prediction beside attention, and their faithfulness.

    a = attribute(model, "the film was not good", "integrated_gradients")
    a.tokens, a.scores, a.target, a.output, a.baseline_output
    faithfulness(model, rows, ("attention", "occlusion", "random")) -> {"attention": {"comprehensiveness": …,
                                                                                     "sufficiency": …}, …}

What is explained (a classifier's class logit, a decoder's next-token logit, MiniLM's cosine similarity to the
second text) is experiments.explained's; the methods are experiments.attribution_methods'; ERASER's measures
experiments.faithfulness'. This module is the contract the view, the benchmark and the checks call.
Does not: cache anything, or touch the model's mode, hooks or parameter gradients.
"""
from __future__ import annotations

from experiments.attribution_methods import ALL_METHODS, LABELS, METHODS, Attribution, attribute_all
from experiments.explained import explain
from experiments.faithfulness import FRACTIONS, measure
from limits.errors import UserError

__all__ = ["ALL_METHODS", "LABELS", "METHODS", "Attribution", "attribute", "faithfulness"]


def attribute(model, text: str, method: str, target=None, text_b: str | None = None, steps: int = 64,
              baseline: str = "pad") -> Attribution:
    """One method's token scores for the model's prediction on text (target: a class name or index, or a next
    token; None: the model's own prediction). ValueError with one sentence when it cannot be explained."""
    if method not in ALL_METHODS:
        raise UserError(f"Unknown method '{method}': choose from {', '.join(ALL_METHODS)}.")
    return attribute_all(explain(model, text, target, text_b), (method,), steps, baseline)[method]


def faithfulness(model, rows, methods, fractions=FRACTIONS) -> dict[str, dict[str, float]]:
    """ERASER comprehensiveness and sufficiency (AOPC over fractions, deletion, special tokens kept) of each
    method over rows (texts, or dicts with "text" and optional "text_b"), means over the rows used."""
    return measure(model, list(rows), tuple(methods), fractions, heads=False).summary
