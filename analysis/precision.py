"""What lower precision does to attention, as numbers: Jensen-Shannon divergence of attention rows,
per-head summaries, and the affine quantization formula (scale, zero point; per tensor or per channel).

Pure numpy on arrays the caller took from two runs of a model; runs nothing and quantizes no model.
The quantization helpers are the textbook formula the page explains (Jacob et al. 2018), used to
draw one layer's error; the model variants themselves are quantized by torchao (models.variants).

    js_rows([[1, 0]], [[0, 1]])  -> [1.0]      (bits: 0 for equal rows, 1 for disjoint ones)
    qparams(np.array([-1.0, 0.5]), symmetric=True) -> (scale 1/127.5, zero point 0)
"""
from __future__ import annotations

import numpy as np


def js_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence in bits between matching rows (last axis) of two stacks of distributions.

    [..., T] x [..., T] -> [...]; in [0, 1]; a row that is all zero in both (a blank, pruned head) gives 0.
    Rows are renormalised, so a half-precision row that sums to 0.999 is compared as a distribution.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    p = p / np.maximum(p.sum(-1, keepdims=True), 1e-300)
    q = q / np.maximum(q.sum(-1, keepdims=True), 1e-300)
    m = 0.5 * (p + q)

    def kl(a: np.ndarray) -> np.ndarray:  # KL(a || m) with 0 log 0 = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log2(a / np.where(m > 0, m, 1.0)), 0.0)
        return terms.sum(-1)

    return np.clip(0.5 * kl(p) + 0.5 * kl(q), 0.0, 1.0)


def head_divergence(ref: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per head, the largest and the mean JS divergence of its query rows: [L, H, T, T] twice -> ([L, H], [L, H])."""
    if ref.shape != var.shape:
        raise ValueError(f"Attention shapes differ ({ref.shape} vs {var.shape}): compare runs on the same tokens.")
    js = js_rows(ref, var)                      # [L, H, T]
    return js.max(-1), js.mean(-1)


def biggest(js: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The k largest heads, largest first (ties by position). [[.1, .5], [.3, 0]], 2 -> [(0, 1), (1, 0)]"""
    flat = np.argsort(-js.ravel(), kind="stable")[:k]
    return [tuple(int(v) for v in divmod(int(i), js.shape[1])) for i in flat]


def max_weight_change(ref: np.ndarray, var: np.ndarray) -> float:
    """The largest |difference| of any single attention weight."""
    return float(np.abs(np.asarray(ref, np.float64) - np.asarray(var, np.float64)).max())


def qparams(x: np.ndarray, bits: int = 8, symmetric: bool = True, axis: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Scale and zero point mapping x onto the integers of a signed `bits`-bit type.

    symmetric: scale = max|x| / ((qmax - qmin) / 2) (127.5 for int8, as PyTorch and torchao), zero point 0
    (weights); the largest value rounds to the edge and is clamped there. Affine: scale = (max - min) / (2^b - 1)
    and the zero point is the integer that 0.0 maps to, so a range like [0, 6] wastes no codes.
    axis None: one pair for the whole tensor; axis=0: one per row (per output channel of a linear weight).
    """
    x = np.asarray(x, dtype=np.float64)
    reduce = None if axis is None else tuple(i for i in range(x.ndim) if i != axis)
    keep = axis is not None
    qmin, qmax = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    eps = np.finfo(np.float32).eps
    if symmetric:
        scale = np.maximum(np.abs(x).max(axis=reduce, keepdims=keep) / ((qmax - qmin) / 2), eps)
        return scale, np.zeros_like(scale, dtype=np.int64)
    lo = np.minimum(x.min(axis=reduce, keepdims=keep), 0.0)
    hi = np.maximum(x.max(axis=reduce, keepdims=keep), 0.0)
    scale = np.maximum((hi - lo) / (qmax - qmin), eps)
    zero = np.clip(np.round(qmin - lo / scale), qmin, qmax).astype(np.int64)
    return scale, zero


def fake_quantize(x: np.ndarray, scale: np.ndarray, zero: np.ndarray, bits: int = 8) -> np.ndarray:
    """x -> dequantize(quantize(x)): round(x / scale) + zero, clamped to the type's range, mapped back."""
    qmin, qmax = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    q = np.clip(np.round(np.asarray(x, np.float64) / scale) + zero, qmin, qmax)
    return (q - zero) * scale


def channel_errors(w: np.ndarray, bits: int = 8) -> dict[str, np.ndarray]:
    """For a linear weight [out, in]: each row's max |w|, and each row's relative error
    ||w - ŵ|| / ||w|| after symmetric quantization with one scale per tensor and one per row."""
    w = np.asarray(w, dtype=np.float64)
    norm = np.maximum(np.linalg.norm(w, axis=1), 1e-30)
    out = {"absmax": np.abs(w).max(axis=1)}
    for name, axis in (("per_tensor", None), ("per_channel", 0)):
        scale, zero = qparams(w, bits, symmetric=True, axis=axis)
        out[name] = np.linalg.norm(w - fake_quantize(w, scale, zero, bits), axis=1) / norm
    return out
