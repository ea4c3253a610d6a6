"""Sparse attention patterns as boolean masks [n, n] (True = query i may attend to key j), their pair
counts in closed form, and what a token can reach after L layers of a pattern.

    sliding_window(6, 1)          # |i - j| <= 1: a band three wide
    pairs("sliding_window", 6, w=1) -> 16 == int(sliding_window(6, 1).sum())
    receptive_field(sliding_window(6, 1), 2)[-1][0] -> [True, True, True, False, False, False]

Patterns: dense; causal; sliding window (reach w on each side, Longformer's band); dilated window
(every r-th token, w of them on each side); block-sparse (block b, tiles within `band` blocks of the
diagonal, plus every `every`-th block as a global block that sees and is seen by all, as BigBird's
blocked form has them); global + local (Longformer: the chosen global tokens see and are seen by all, the rest a
window); BigBird (the first g tokens global, a window, and r random keys per other query drawn from
outside its window and the globals, from a fixed seed). Every pattern keeps the diagonal, so no row is
empty and the reach after L layers only grows.
A bad choice (a window, block or global token outside the sequence) raises ValueError with one
sentence. Does not run models or attention: analysis.efficient computes with these masks.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from analysis import masks
from limits.errors import UserError

PATTERNS = ("dense", "causal", "sliding_window", "dilated_window", "block_sparse", "longformer", "bigbird")
TITLES = {"dense": "Dense", "causal": "Causal", "sliding_window": "Sliding window", "dilated_window": "Dilated window",
          "block_sparse": "Block-sparse", "longformer": "Global + local (Longformer)",
          "bigbird": "Random + window + global (BigBird)"}
SHORT = {"dense": "dense", "causal": "causal", "sliding_window": "window", "dilated_window": "dilated",
         "block_sparse": "block-sparse", "longformer": "Longformer", "bigbird": "BigBird"}


def _check_n(n: int) -> None:
    if not isinstance(n, int) or n < 1:
        raise UserError(f"A pattern needs at least one token, not {n!r}.")


def _check_window(n: int, w: int, dilation: int = 1) -> None:
    if not isinstance(dilation, int) or dilation < 1:
        raise UserError(f"The dilation must be a whole number of tokens, at least 1, not {dilation!r}.")
    if not isinstance(w, int) or not 0 <= w * dilation <= n - 1:
        reach = f"A window of {w} with dilation {dilation} reaches {w * dilation}" if dilation > 1 else \
            f"The window reaches {w}"
        most = (n - 1) // dilation
        raise UserError(f"{reach} tokens to each side, outside the {n} tokens: choose a window of 0 to {most}.")


def _check_blocks(n: int, block: int, band: int, every: int) -> int:
    """The number of blocks, after checking the block size, the band and the global-block stride."""
    if not isinstance(block, int) or not 1 <= block <= n:
        raise UserError(f"A block of {block} tokens does not fit in the {n} tokens: choose 1 to {n}.")
    nb = -(-n // block)
    if not isinstance(band, int) or not 0 <= band <= nb - 1:
        raise UserError(f"A band of {band} blocks is outside the {nb} blocks of {block} tokens: choose 0 to {nb - 1}.")
    if not isinstance(every, int) or not 0 <= every <= nb:
        raise UserError(f"A global block every {every} blocks does not fit in {nb} blocks: choose 0 (none) to {nb}.")
    return nb


def check_globals(n: int, globals_: Sequence[int]) -> list[int]:
    """Sorted distinct global positions, or ValueError naming the first outside 0..n-1."""
    bad = [g for g in globals_ if not isinstance(g, (int, np.integer)) or not 0 <= g < n]
    if bad:
        raise UserError(f"Global token {str(bad[0])[:20]} is outside the {n} tokens: choose positions 0 to {n - 1}.")
    return sorted({int(g) for g in globals_})


def _check_bigbird(n: int, n_global: int, n_random: int) -> None:
    if not isinstance(n_global, int) or not 0 <= n_global <= n:
        raise UserError(f"{n_global} global tokens do not fit in the {n} tokens: choose 0 to {n}.")
    if not isinstance(n_random, int) or not 0 <= n_random <= n:
        raise UserError(f"{n_random} random keys per query do not fit in the {n} tokens: choose 0 to {n}.")


def parse_globals(text: str) -> list[int]:
    """'0, 5 7' -> [0, 5, 7]; ValueError with one sentence for anything but whole numbers."""
    parts = text.replace(",", " ").split()
    if not all(p.isascii() and p.isdigit() and len(p) < 10 for p in parts):
        raise UserError("Global tokens are positions separated by commas, such as 0, 5 (0 is the first token).")
    return [int(p) for p in parts]


def check(name: str, n: int, *, w: int = 2, dilation: int = 2, block: int = 4, band: int = 0, every: int = 0,
          globals_: Sequence[int] = (0,), n_random: int = 2, seed: int = 0) -> None:
    """ValueError with one sentence when pattern `name` cannot be laid over n tokens with these settings."""
    if name not in PATTERNS:
        raise UserError(f"Unknown pattern {str(name)[:40]!r}: choose one of {', '.join(PATTERNS)}.")
    _check_n(n)
    if name in ("sliding_window", "longformer", "bigbird"):
        _check_window(n, w)
    elif name == "dilated_window":
        _check_window(n, w, dilation)
    elif name == "block_sparse":
        _check_blocks(n, block, band, every)
    if name == "longformer":
        check_globals(n, globals_)
    elif name == "bigbird":
        _check_bigbird(n, len(globals_), n_random)


def dense(n: int) -> torch.Tensor:
    _check_n(n)
    return torch.ones(n, n, dtype=torch.bool)


def causal(n: int) -> torch.Tensor:
    _check_n(n)
    return masks.causal(n)


def _offsets(n: int) -> torch.Tensor:
    i = torch.arange(n)
    return i[None, :] - i[:, None]  # (n, n): key position minus query position


def sliding_window(n: int, w: int) -> torch.Tensor:
    """Query i sees keys i-w .. i+w."""
    _check_n(n)
    _check_window(n, w)
    return torch.ones(n, n, dtype=torch.bool).triu(-w).tril(w)  # n^2 bytes and nothing bigger, even at 16k


def dilated_window(n: int, w: int, dilation: int) -> torch.Tensor:
    """Query i sees keys i + k*dilation for k = -w .. w: as many keys as a window, reaching dilation times further."""
    _check_n(n)
    _check_window(n, w, dilation)
    off = _offsets(n)
    return (off.abs() <= w * dilation) & (off % dilation == 0)


def block_sparse(n: int, block: int, band: int = 0, every: int = 0) -> torch.Tensor:
    """Tiles (I, J) of block x block with |I - J| <= band, plus global blocks: every `every`-th block
    (J % every == every - 1) sees every block and is seen by every block (0: none)."""
    _check_n(n)
    _check_blocks(n, block, band, every)
    nb = -(-n // block)
    tiles = torch.ones(nb, nb, dtype=torch.bool).triu(-band).tril(band)  # (nb, nb)
    if every:
        tiles[:, every - 1::every] = True
        tiles[every - 1::every, :] = True
    return tiles.repeat_interleave(block, 0)[:n].repeat_interleave(block, 1)[:, :n]


def longformer(n: int, w: int, globals_: Sequence[int] = (0,)) -> torch.Tensor:
    """A sliding window, plus global tokens that see every key and that every query sees."""
    keep = sliding_window(n, w)
    g = check_globals(n, globals_)
    keep[g, :] = True
    keep[:, g] = True
    return keep


def bigbird(n: int, w: int, n_global: int = 1, n_random: int = 2, seed: int = 0) -> torch.Tensor:
    """The first n_global tokens global, a window w, and n_random keys per other query, drawn without
    replacement (seeded) from the keys its window and the globals leave out."""
    _check_n(n)
    _check_bigbird(n, n_global, n_random)
    keep = longformer(n, w, range(n_global))
    gen = torch.Generator().manual_seed(seed)
    for i in range(n_global, n):
        free = (~keep[i]).nonzero()[:, 0]  # (f,)
        keep[i, free[torch.randperm(len(free), generator=gen)[:n_random]]] = True
    return keep


def build(name: str, n: int, *, w: int = 2, dilation: int = 2, block: int = 4, band: int = 0, every: int = 0,
          globals_: Sequence[int] = (0,), n_random: int = 2, seed: int = 0) -> torch.Tensor:
    """The mask of pattern `name` (one of PATTERNS) with these settings; each pattern reads the ones it has.
    BigBird takes its global count from len(globals_) (its globals are always the first tokens)."""
    check(name, n, w=w, dilation=dilation, block=block, band=band, every=every, globals_=globals_,
          n_random=n_random)
    return {
        "dense": lambda: dense(n), "causal": lambda: causal(n), "sliding_window": lambda: sliding_window(n, w),
        "dilated_window": lambda: dilated_window(n, w, dilation),
        "block_sparse": lambda: block_sparse(n, block, band, every), "longformer": lambda: longformer(n, w, globals_),
        "bigbird": lambda: bigbird(n, w, len(globals_), n_random, seed),
    }[name]()


def _window_row(n: int, w: int) -> np.ndarray:
    """Keys each query sees in a window w: n=5, w=1 -> [2, 3, 3, 3, 2]."""
    i = np.arange(n)
    return np.minimum(i + w, n - 1) - np.maximum(i - w, 0) + 1


def pairs(name: str, n: int, *, w: int = 2, dilation: int = 2, block: int = 4, band: int = 0, every: int = 0,
          globals_: Sequence[int] = (0,), n_random: int = 2, seed: int = 0) -> int:
    """Query-key pairs the pattern keeps, from a formula (no mask is built): what attention scores instead of n^2."""
    check(name, n, w=w, dilation=dilation, block=block, band=band, every=every, globals_=globals_,
          n_random=n_random)
    if name == "dense":
        return n * n
    if name == "causal":
        return n * (n + 1) // 2
    if name == "sliding_window":
        return n * (2 * w + 1) - w * (w + 1)
    if name == "dilated_window":
        return n + 2 * sum(n - k * dilation for k in range(1, w + 1))
    if name == "block_sparse":
        nb = -(-n // block)
        sizes = np.full(nb, block, dtype=np.int64)
        sizes[-1] = n - block * (nb - 1)  # the last block may be short
        glob = (np.arange(nb) % every == every - 1) if every else np.zeros(nb, dtype=bool)
        local = np.concatenate([[0], np.cumsum(sizes * ~glob)])  # tokens of non-global blocks up to each block
        lo, hi = np.maximum(np.arange(nb) - band, 0), np.minimum(np.arange(nb) + band, nb - 1)
        near = local[hi + 1] - local[lo]  # keys in non-global blocks within the band of each block
        # a global block's rows see all n keys; any other block sees the global blocks and its band
        return int((sizes * np.where(glob, n, sizes[glob].sum() + near)).sum())
    g = np.array(check_globals(n, globals_) if name == "longformer" else range(len(globals_)), dtype=int)
    row = _window_row(n, w)
    outside = np.abs(g[:, None] - np.arange(n)[None, :]) > w  # (g, n): pairs with a global the window lacks
    # window, + each global's row and column outside the window, - the global-global pairs counted twice
    count = int(row.sum()) + 2 * int(outside.sum()) - int(outside[:, g].sum())
    if name == "longformer":
        return count
    rest = np.setdiff1d(np.arange(n), g)
    free = n - row[rest] - outside[:, rest].sum(axis=0)  # keys a non-global query has left for random picks
    return count + int(np.minimum(n_random, free).sum())


def receptive_field(mask: torch.Tensor, layers: int) -> list[np.ndarray]:
    """reach[l][i, j]: whether token j's input can influence token i's output after l + 1 layers of `mask`.

    Layer by layer as set unions of packed bit rows (row i after a layer is the OR of the rows of the
    keys i attends to), not matrix products. [n, n] bool -> `layers` arrays [n, n] bool.
    """
    if not isinstance(layers, int) or layers < 1:
        raise UserError(f"The receptive field needs at least one layer, not {layers!r}.")
    keep = mask.cpu().numpy().astype(bool)
    n = keep.shape[0]
    neighbours = [np.flatnonzero(row) for row in keep]
    reach = np.packbits(keep, axis=1)  # (n, ceil(n / 8)): row i = what i sees after one layer
    out = [keep.copy()]
    for _ in range(layers - 1):
        reach = np.stack([np.bitwise_or.reduce(reach[nb], axis=0) for nb in neighbours])
        out.append(np.unpackbits(reach, axis=1, count=n).astype(bool))
    return out


def full_reach_layer(reach: list[np.ndarray]) -> int | None:
    """The first layer count (1-based) after which every token reaches every token, or None within these layers."""
    for layer, r in enumerate(reach, start=1):
        if r.all():
            return layer
    return None
