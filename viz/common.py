"""Small helpers every figure uses: safe, unique token labels and one colour scale."""
from __future__ import annotations

import html
from collections import Counter

COLORSCALE = "Viridis"


def token_labels(tokens: list[str]) -> list[str]:
    """Escaped, unique axis labels, repeats marked by position: ['the','cat','the'] -> ['the ·0','cat','the ·2']"""
    counts = Counter(tokens)
    return [html.escape(t or "∅") + (f" ·{i}" if counts[t] > 1 else "") for i, t in enumerate(tokens)]
