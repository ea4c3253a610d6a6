"""What a sliding-window decoder's last token can be reached by: a window of w tokens, the query's own included, reaches
w - 1 tokens back, so layers of windows w_l carry Σ(w_l - 1) tokens back to the last one; a full-attention layer
reaches all. Patching says so when two texts differ only further back. Runs no model.

    out_of_reach(mistral_with_3_token_windows, a, b)   # "The texts differ at token 7, 5 tokens before the last, ..."
"""
from __future__ import annotations

import torch


def out_of_reach(model, a: torch.Tensor, b: torch.Tensor) -> str | None:
    """The sentence for texts (1, T) that differ only further back than a sliding-window model's layers carry to the
    last token (a window of w tokens, the query's own included, reaches w - 1 back; a full-attention layer reaches
    all), else None."""
    windows = model.windows
    if not windows or any(w is None for w in windows) or a.shape != b.shape:
        return None
    differ = (a[0] != b[0]).nonzero()[:, 0]                               # positions where the texts differ
    T, first, last = a.shape[1], int(differ[0]), int(differ[-1])
    reach = sum(w - 1 for w in windows)
    if T - 1 - last <= reach:
        return None
    sizes = f"{windows[0]} tokens in each of its {len(windows)} layers" if len(set(windows)) == 1 else \
        f"{', '.join(map(str, windows))} tokens in its {len(windows)} layers"
    return (f"The texts differ {'first ' if first < last else ''}at token {first}, {T - 1 - first} tokens before the "
            f"last{f' (and last at token {last})' if first < last else ''}, and this model's "
            f"sliding windows ({sizes}) carry at most {reach} tokens back to the last one, so the change cannot reach "
            f"the answer: change one of the last {reach + 1} tokens.")
