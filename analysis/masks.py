"""The causal mask every decoder here uses: which keys each query may see.

    causal(3, 3) -> [[T, F, F], [T, T, F], [T, T, T]]
    causal(1, 4) -> [[T, T, T, T]]      one new query after three cached positions

The n_query queries are the last positions of the n_key keys (a KV cache holds the earlier ones), so
query i sits at absolute position n_key - n_query + i and may see keys up to there. True = may attend.
"""
from __future__ import annotations

import torch


def causal(n_query: int, n_key: int | None = None, device: torch.device | str | None = None,
           window: int | None = None) -> torch.Tensor:
    """Bool (n_query, n_key), True where the query may attend; n_key defaults to n_query. With a sliding `window`
    of W tokens (Mistral, Qwen2, Gemma 2's local layers) a query also sees only its last W keys, itself included:
    0 <= i - j < W, as transformers' sliding-window mask."""
    n_key = n_query if n_key is None else n_key
    if n_query > n_key:
        raise ValueError(f"{n_query} queries cannot be the last positions of {n_key} keys.")
    allowed = torch.ones(n_query, n_key, dtype=torch.bool, device=device)
    allowed = allowed.tril(diagonal=n_key - n_query)
    return allowed if window is None else allowed.triu(diagonal=n_key - n_query - window + 1)
