"""A vision transformer's tokens as an image: which patch a token is, and attention over patches as a picture.

A ViT cuts an image into a grid of patches and reads them row by row after its special tokens
([CLS], and [DIST] for DeiT), so token n_special + r * cols + c is patch (r, c): with cols=4 and one special
token, token 7 is patch r1c2. These helpers turn
rows of attention weights (from a trace, or from analysis.rollout) into (rows, cols) maps to paint
over the image. Nothing here runs a model or draws.

    to_grid(weights[layer, :, 0], (4, 4), 1)   -> [H, 4, 4]: each head's attention from [CLS]
"""
from __future__ import annotations

import numpy as np


def to_grid(rows: np.ndarray, grid: tuple[int, int], n_special: int) -> np.ndarray:
    """[..., T] attention rows over all tokens -> [..., rows, cols] over the patches only (specials dropped)."""
    r, c = grid
    rows = np.asarray(rows)
    if rows.shape[-1] != n_special + r * c:
        raise ValueError(f"{rows.shape[-1]} tokens do not make {n_special} special tokens and {r}×{c} patches")
    return rows[..., n_special:].reshape(*rows.shape[:-1], r, c)


def special_share(rows: np.ndarray, n_special: int) -> np.ndarray:
    """[..., T] -> [...]: the weight a row puts on the special tokens, which a patch map leaves out."""
    return np.asarray(rows)[..., :n_special].sum(axis=-1)
