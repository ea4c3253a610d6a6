"""A token shown in its sentence, as the Corpus view's tables and hovers write it: pure text, no model.

What it does not: read attention, or escape HTML (a figure escapes its hover texts itself, viz/corpus.py).
"""
from __future__ import annotations

import numpy as np

from analysis.tokens import readable_all


def context(tokens: list[str], query: int, key: int | None = None, width: int = 6) -> str:
    """A token in its sentence: «query», [key], at most `width` tokens either side. '… the «bank» was …'"""
    lo, hi = max(0, min(query, key if key is not None else query) - width), max(query, key or 0) + width + 1
    marked = [f"«{t}»" if i == query else f"[{t}]" if i == key else t for i, t in enumerate(readable_all(tokens))]
    return ("… " if lo > 0 else "") + " ".join(marked[lo:hi]) + (" …" if hi < len(tokens) else "")


def hover(points: dict) -> list[str]:
    """Each point's token in its sentence, for experiments.corpus.qk_points() output (tokens in corpus order)."""
    starts = np.flatnonzero(np.r_[True, points["row"][1:] != points["row"][:-1]])
    bounds = dict(zip(points["row"][starts].tolist(), zip(starts, np.r_[starts[1:], len(points["row"])])))
    return [context(points["tokens"][slice(*bounds[r])], p) for r, p in zip(points["row"].tolist(),
                                                                            points["pos"].tolist())]
