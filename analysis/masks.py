"""The causal mask every decoder here uses: which keys each query may see.

    causal(3, 3) -> [[T, F, F], [T, T, F], [T, T, T]]
    causal(1, 4) -> [[T, T, T, T]]      one new query after three cached positions

The n_query queries are the last positions of the n_key keys (a KV cache holds the earlier ones), so
query i sits at absolute position n_key - n_query + i and may see keys up to there. True = may attend.
"""
from __future__ import annotations

import torch


def causal(n_query: int, n_key: int | None = None, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool (n_query, n_key), True where the query may attend; n_key defaults to n_query."""
    n_key = n_query if n_key is None else n_key
    if n_query > n_key:
        raise ValueError(f"{n_query} queries cannot be the last positions of {n_key} keys.")
    return torch.ones(n_query, n_key, dtype=torch.bool, device=device).tril(diagonal=n_key - n_query)
