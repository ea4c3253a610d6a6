"""Attention that never holds the n x n matrix: tiled (FlashAttention's online softmax) and block-sparse.

    tiled_attention(q, k, v, causal=True, block=64)   # (B, H, T, d) -> (B, H, T, d), as SDPA gives it
    sparse_attention(q, k, v, mask)                   # mask [T, S] bool, True = may attend
    online_softmax_steps(q, k, v, query_block=0, block=4)  # one query block over the key blocks, step by step

Tiled: keys and values are read one block of `block` columns at a time; for every query row the
running max m, running sum l and unnormalised partial output O are updated (Dao et al. 2022,
Algorithm 1; O is divided by l once at the end, as in FlashAttention-2). Only (B, H, T, block)
scores exist at any moment. Query blocks are independent (a GPU gives each its own thread block);
here torch runs all query blocks of a key block at once, and with causal=True the query blocks
that lie wholly before a key block never see it. Sparse: the mask is cut into block x block
tiles; each query block gathers only the key blocks where its tile holds a True, so work and
memory follow the kept blocks, not n^2; inside a kept tile the mask decides pair by pair.
eager_attention is the textbook softmax(QK^T / sqrt d) V that does materialise the matrix: the
reference the cost curves compare against.

Does not: compute gradients by recomputation (forward only), use dropout, or run a fused kernel
(torch's scaled_dot_product_attention is that, and the cost experiment measures it beside these).
"""
# m, l and O are the names FlashAttention's paper gives the running max, running sum and partial output
# ruff: noqa: E741
from __future__ import annotations

from dataclasses import dataclass

import torch

from analysis import masks
from limits.errors import UserError


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block: int) -> None:
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"q, k and v must be (batch, heads, tokens, head_dim); got {q.ndim}, {k.ndim} and "
                         f"{v.ndim} dimensions.")
    if k.shape[:2] != q.shape[:2] or v.shape[:3] != k.shape[:3] or k.shape[-1] != q.shape[-1]:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)} do not fit together: "
                         "they need the same batch and heads, k and v the same tokens, q and k the same head_dim.")
    if not isinstance(block, int) or block < 1:
        raise UserError(f"The block size must be a whole number of tokens, at least 1, not {block!r}.")


def eager_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                    causal: bool = False) -> torch.Tensor:
    """softmax(QK^T / sqrt d + mask) V with the (B, H, T, S) matrix held whole: the textbook way."""
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)  # (B, H, T, S): scaling q costs T*d, not T*S
    if causal:
        mask = masks.causal(q.shape[-2], k.shape[-2], q.device)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v  # (B, H, T, dv)


def online_update(m: torch.Tensor, l: torch.Tensor, O: torch.Tensor, S: torch.Tensor, V: torch.Tensor):
    """One key block folded into the running state; every tensor's leading dims are (..., rows).

    m (..., r, 1) running max, l (..., r, 1) running sum, O (..., r, dv) unnormalised partial output,
    S (..., r, c) this block's scaled scores (-inf where masked), V (..., c, dv) this block's values.
    Returns m_new, l_new, O_new, alpha = exp(m - m_new) (how much the old state shrinks), P = exp(S - m_new).
    """
    m_new = torch.maximum(m, S.amax(dim=-1, keepdim=True))  # (..., r, 1)
    alpha = torch.exp(m - m_new)  # (..., r, 1): 0 on the first block (m = -inf), 1 when the max did not move
    P = torch.exp(S - m_new)  # (..., r, c): at most 1, so never overflows
    l_new = alpha * l + P.sum(dim=-1, keepdim=True)  # (..., r, 1)
    O_new = alpha * O + P @ V  # (..., r, dv)
    return m_new, l_new, O_new, alpha, P


def tiled_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False,
                    block: int = 64) -> torch.Tensor:
    """Exact attention computed over key blocks of `block` columns with the online softmax.

    q (B, H, T, d), k (B, H, S, d), v (B, H, S, dv) -> (B, H, T, dv), equal to
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal) up to rounding.
    causal follows SDPA: query i sees keys 0..i (the top-left triangle when T != S).
    """
    _check(q, k, v, block)
    B, H, T, d = q.shape
    S_len, dv = k.shape[2], v.shape[-1]
    q = q * d ** -0.5  # (B, H, T, d): scale once, not every block
    m = torch.full((B, H, T, 1), float("-inf"), dtype=q.dtype, device=q.device)  # running max
    l = torch.zeros(B, H, T, 1, dtype=q.dtype, device=q.device)  # running sum of exp(s - m)
    O = torch.zeros(B, H, T, dv, dtype=q.dtype, device=q.device)  # partial output, not yet divided by l
    for j0 in range(0, S_len if not causal else min(S_len, T), block):
        j1 = min(j0 + block, S_len)
        # causal: query blocks before j0 never see these keys, so rows start at j0 (a block boundary)
        r0 = j0 if causal else 0
        Kj, Vj = k[:, :, j0:j1], v[:, :, j0:j1]  # (B, H, c, d), (B, H, c, dv)
        S = q[:, :, r0:] @ Kj.transpose(-2, -1)  # (B, H, T - r0, c): the only scores that exist now
        if causal and j1 - 1 > r0:  # the diagonal tile: query i sees key j only when j <= i
            rows = torch.arange(r0, T, device=q.device)[:, None]  # (T - r0, 1)
            cols = torch.arange(j0, j1, device=q.device)[None, :]  # (1, c)
            S = S.masked_fill(cols > rows, float("-inf"))
        if r0 == 0:
            m, l, O, _, _ = online_update(m, l, O, S, Vj)
        else:  # only rows r0.. change; the rows above keep their state
            m[:, :, r0:], l[:, :, r0:], O[:, :, r0:], _, _ = online_update(m[:, :, r0:], l[:, :, r0:],
                                                                            O[:, :, r0:], S, Vj)
    return O / l  # (B, H, T, dv)


def _any_blocks(mask: torch.Tensor, block: int, dim: int) -> torch.Tensor:
    """OR over runs of `block` along dim 0 or 1 (the last run may be short), without copying the mask."""
    m = mask if dim == 1 else mask.T
    n, full = m.shape[1], m.shape[1] // block * block
    out = m[:, :full].reshape(m.shape[0], full // block, block).any(dim=2)  # (rows, whole blocks)
    if full < n:
        out = torch.cat([out, m[:, full:].any(dim=1, keepdim=True)], dim=1)
    return out if dim == 1 else out.T


def block_layout(mask: torch.Tensor, block: int = 64) -> torch.Tensor:
    """Which block x block tiles of a [T, S] mask hold any True -> [ceil(T/block), ceil(S/block)] bool.

    Reads the whole mask once, so a model computes it once per pattern and passes it to every call of
    sparse_attention. ValueError when a query may attend to no key (its softmax would have nothing to sum).
    [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]] with block 2 -> [[1, 0], [0, 1]]
    """
    if mask.dtype != torch.bool or mask.ndim != 2:
        raise ValueError(f"The mask must be a boolean [tokens, keys] matrix (True = may attend), "
                         f"not {mask.dtype} with shape {tuple(mask.shape)}.")
    if not isinstance(block, int) or block < 1:
        raise UserError(f"The block size must be a whole number of tokens, at least 1, not {block!r}.")
    cols = _any_blocks(mask, block, dim=1)  # (T, nk): which key blocks each query row touches
    if not bool(cols.any(dim=1).all()):
        row = int((~cols.any(dim=1)).nonzero()[0])
        raise UserError(f"Query {row} may attend to no key: every row of the mask needs at least one True.")
    return _any_blocks(cols, block, dim=0)  # (nq, nk)


def sparse_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, *,
                     block: int = 64, layout: torch.Tensor | None = None) -> torch.Tensor:
    """Attention computed only over the key blocks `mask` keeps, equal to SDPA(q, k, v, attn_mask=mask).

    q (B, H, T, d), k (B, H, S, d), v (B, H, S, dv), mask [T, S] bool (True = may attend; every row
    needs at least one True) -> (B, H, T, dv). layout = block_layout(mask, block), computed here when
    not given. Each query block of `block` rows gathers the K key blocks its tiles keep (K = the most any
    query block keeps; fewer are padded and masked out), so scores are (B, H, T, K * block) instead of
    (B, H, T, S), and only the kept tiles of the mask are read.
    """
    _check(q, k, v, block)
    B, H, T, d = q.shape
    S_len = k.shape[2]
    if mask.dtype != torch.bool or tuple(mask.shape) != (T, S_len):
        raise ValueError(f"The mask must be a boolean [{T}, {S_len}] matrix (True = may attend), "
                         f"not {mask.dtype} {tuple(mask.shape)}.")
    mask = mask.to(q.device)
    layout = block_layout(mask, block) if layout is None else layout.to(q.device)  # (nq, nk)
    nq, nk = layout.shape
    if (nq, nk) != (-(-T // block), -(-S_len // block)):
        raise ValueError(f"The layout {tuple(layout.shape)} is not for blocks of {block} over {T} x {S_len}: "
                         "make it with block_layout(mask, block).")
    K = int(layout.sum(dim=1).max())
    # per query block, the kept key block indices first (a stable sort keeps them in order), padding after
    order = torch.sort((~layout).to(torch.int8), dim=1, stable=True).indices[:, :K]  # (nq, K)
    valid = torch.gather(layout, 1, order)  # (nq, K): False where the slot is padding
    order = torch.where(valid, order, order[:, :1])  # padding repeats a kept block: a dropped one is never read

    def blocks(t: torch.Tensor, n: int) -> torch.Tensor:  # (B, H, L, x) -> (B, H, n, block, x), zero padded
        return torch.nn.functional.pad(t, (0, 0, 0, n * block - t.shape[2])).view(B, H, n, block, t.shape[-1])

    Qb = blocks(q * d ** -0.5, nq)  # (B, H, nq, block, d)
    Kg = blocks(k, nk)[:, :, order].flatten(3, 4)  # (B, H, nq, K * block, d): only the kept key blocks
    Vg = blocks(v, nk)[:, :, order].flatten(3, 4)  # (B, H, nq, K * block, dv)
    offs = torch.arange(block, device=q.device)
    rows = torch.arange(nq, device=q.device)[:, None] * block + offs  # (nq, block) query positions
    cols = (order[:, :, None] * block + offs).flatten(1)  # (nq, K * block) key positions
    keep = mask[rows.clamp(max=T - 1)[:, :, None], cols.clamp(max=S_len - 1)[:, None, :]]  # (nq, block, K * block)
    keep &= (cols < S_len)[:, None, :] & valid.repeat_interleave(block, dim=1)[:, None, :]
    keep[rows >= T] = True  # padding queries (cut off below) attend everywhere, so no row is all -inf
    S = (Qb @ Kg.transpose(-2, -1)).masked_fill_(~keep, float("-inf"))  # (B, H, nq, block, K * block)
    out = torch.softmax(S, dim=-1) @ Vg  # (B, H, nq, block, dv)
    return out.flatten(2, 3)[:, :, :T]  # (B, H, T, dv)


@dataclass(frozen=True)
class Step:
    """The state of one query block after folding in key block `index` (rows: the block's queries)."""
    index: int
    keys: tuple[int, int]      # key positions [start, stop) of this block
    S: torch.Tensor            # (r, c) scaled scores, -inf where causal hides a key
    m_prev: torch.Tensor       # (r,) running max before
    m: torch.Tensor            # (r,) running max after
    alpha: torch.Tensor        # (r,) exp(m_prev - m): the factor old l and O are rescaled by
    l_prev: torch.Tensor       # (r,)
    l: torch.Tensor            # (r,) running sum after
    out: torch.Tensor          # (r, dv) O / l: attention over the keys seen so far


def online_softmax_steps(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, query_block: int = 0,
                         block: int = 4, causal: bool = False) -> list[Step]:
    """One query block walked over the key blocks with the same update tiled_attention runs.

    q (T, d), k (S, d), v (S, dv) of one head. The last step's `out` is exact attention for the
    block's rows; after step j, `out` is exact attention restricted to the keys seen so far.
    ValueError when the block size or the query block is outside the sequence.
    """
    T, S_len = q.shape[0], k.shape[0]
    if not isinstance(block, int) or not 1 <= block <= T:
        raise UserError(f"The block size must be 1 to {T} (the number of tokens), not {block}.")
    n_blocks = -(-T // block)
    if not 0 <= query_block < n_blocks:
        raise UserError(f"Query block {query_block} does not exist: {T} tokens in blocks of {block} "
                        f"make blocks 0 to {n_blocks - 1}.")
    i0, i1 = query_block * block, min((query_block + 1) * block, T)
    Q = q[i0:i1] * q.shape[-1] ** -0.5  # (r, d)
    r = i1 - i0
    m = torch.full((r, 1), float("-inf"), dtype=q.dtype)  # running max
    l = torch.zeros(r, 1, dtype=q.dtype)  # running sum
    O = torch.zeros(r, v.shape[-1], dtype=q.dtype)  # unnormalised partial output
    steps = []
    for index, j0 in enumerate(range(0, min(S_len, i1) if causal else S_len, block)):
        j1 = min(j0 + block, S_len)
        S = Q @ k[j0:j1].T  # (r, c)
        if causal:
            S = S.masked_fill(torch.arange(j0, j1)[None, :] > torch.arange(i0, i1)[:, None], float("-inf"))
        m_new, l_new, O_new, alpha, _ = online_update(m, l, O, S, v[j0:j1])
        steps.append(Step(index, (j0, j1), S, m[:, 0], m_new[:, 0], alpha[:, 0], l[:, 0], l_new[:, 0],
                          O_new / l_new))
        m, l, O = m_new, l_new, O_new
    return steps
