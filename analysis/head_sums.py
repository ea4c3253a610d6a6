"""One pass over a sentence's attention: per head, the sums that every Clark-style behaviour is a mean of.

Each behaviour of analysis.patterns is a mean over some query rows i of Σ_j A[i, j] · M[i, j] for a 0/1 table M
(the previous key, [CLS] keys, keys holding the query's token, ...) or |i - j| for the distance; the entropy is
the one term that is not linear: Σ_j A[i, j] log A[i, j]. `sums` reads each weight once and adds all of them up
in one compiled loop (numba, cached on disk like analysis._dinic), per row in the weights' dtype and per head
in float64. A float32 log written out here (Cephes' logf: the exponent from the bits, a degree-9 polynomial of
the mantissa, ~1e-7 relative) lets the compiler vectorise the loop, which a call to the C library's logf prevents
(the entropy was 1.6 of the 2.4 s numpy took for 1,024 heads at 512 tokens; the whole pass now takes a tenth).
0 log 0 = 0; a subnormal weight's log is about -88 instead of -87 to -103 (its term, below 1e-36, is off by less than
2e-37). A head whose weights hold a NaN gets NaN in every sum (the compiler is not told that NaN never occurs).
Layers of a large trace run on threads (the loop releases the GIL), decided by size, not the clock.

analysis.patterns calls it for large traces only (below analysis.head_sums_np.COMPILED weights it takes that plain
numpy twin: importing numba costs a process about 100 MB for good). Does not divide by the number of queries
(analysis.patterns does) and does not run a model.

    sums(w [L, H, T, T], keys [C, T], same [T, T], after [T, T]) -> [L, H, 1 + C + len(ROWS)] float64
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, types
from numba.extending import intrinsic, overload

from analysis.head_sums_np import ROWS, fit

THREADED = 1 << 22  # weights of at least this many elements run their layers on threads
FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}  # fastmath but for 'nnan' and 'ninf': a NaN stays a NaN


def sums(weights: np.ndarray, keys: np.ndarray, same: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Per head [Σ_ij A log A, Σ_ij A · keys[c, j] for each c, then ROWS: Σ_i A[i, i-1], Σ_i A[i, i+1], Σ_i A[i, i],
    Σ_ij A · same[i, j], Σ_ij A · |i - j|, Σ_ij A · after[i, j]] for weights [L, H, Tq, Tk] (float32 or float64),
    keys [C, Tk], same and after [Tq, Tk] -> [L, H, 1 + C + 6] float64; all NaN for a head with a NaN weight."""
    n_layers, n_heads, n_q, n_k = weights.shape
    fit(n_q, n_k, keys, same, after)  # compiled code: no bounds checks
    dtype = weights.dtype if weights.dtype in (np.float32, np.float64) else np.float32
    keys, same, after = (_frozen(t, dtype) for t in (keys, same, after))
    position = _frozen(np.arange(max(n_q, n_k)), dtype)  # |i - j| in the weights' dtype
    out = np.zeros((n_layers, n_heads, 1 + len(keys) + len(ROWS)))                            # (L, H, 1 + C + 6)

    def one(layer: int) -> None:
        _layer(_frozen(weights[layer], dtype), keys, same, after, position, out[layer])        # (H, Tq, Tk)

    if weights.size < THREADED or n_layers == 1:
        for layer in range(n_layers):
            one(layer)
    else:
        with ThreadPoolExecutor(min(n_layers, os.cpu_count() or 1)) as pool:
            list(pool.map(one, range(n_layers)))
    return out


def _frozen(a: np.ndarray, dtype) -> np.ndarray:
    """a as a C-contiguous read-only array of dtype (a view, no copy, where it is one already). numba compiles a
    read-only, a writable and a strided array apart (about a second each, then cached): so every caller, a kept
    (read-only) trace or a fresh one, uses the one compiled loop per dtype that a warm-up compiled."""
    a = np.ascontiguousarray(a, dtype=dtype).view()
    a.flags.writeable = False
    return a


@njit(cache=True, nogil=True, fastmath=FAST)
def _layer(w, keys, same, after, position, out):  # pragma: no cover - compiled; checked against numpy in tests
    """sums of one layer: w (H, Tq, Tk) -> adds into out (H, 1 + C + 6)."""
    n_heads, n_q, n_k = w.shape
    n_keys = keys.shape[0]
    zero = w.dtype.type(0)
    for h in range(n_heads):
        for i in range(n_q):
            ent, dist, twin, ind = zero, zero, zero, zero
            for j in range(n_k):
                a = w[h, i, j]
                ent += a * _log(a)
                dist += a * abs(position[i] - position[j])
                twin += a * same[i, j]
                ind += a * after[i, j]
            out[h, 0] += ent
            for c in range(n_keys):
                s = zero
                for j in range(n_k):
                    s += w[h, i, j] * keys[c, j]
                out[h, 1 + c] += s
            r = 1 + n_keys
            if 0 < i <= n_k:
                out[h, r] += w[h, i, i - 1]
            if i + 1 < n_k:
                out[h, r + 1] += w[h, i, i + 1]
            if i < n_k:
                out[h, r + 2] += w[h, i, i]
            out[h, r + 3] += twin
            out[h, r + 4] += dist
            out[h, r + 5] += ind
        if out[h, 0] != out[h, 0]:  # a NaN weight makes its row's entropy NaN: every sum of the head is NaN
            out[h, :] = np.nan


def _log(a):
    """log(a), 0 for a = 0 in the sums (0 · log 0 = 0): compiled only, see the overload below."""
    raise NotImplementedError("_log runs inside compiled code only")


@overload(_log)
def _log_overload(a):
    if a == types.float32:
        return lambda a: _log32(a)
    return lambda a: np.log(a) if a > 0 else 0.0


@intrinsic
def _bits(typingctx, a):
    """float32 -> int32 with the same bits."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int32))
    return types.int32(types.float32), codegen


@intrinsic
def _float(typingctx, b):
    """int32 -> float32 with the same bits."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))
    return types.float32(types.int32), codegen


@njit(fastmath=FAST, inline="always")
def _log32(a):  # pragma: no cover - compiled
    """Cephes logf without branches: a = m · 2^e with m in [√½, √2), log a = e · ln 2 + log m by a polynomial.
    0 (and subnormals) give about -88: finite, so 0 · log 0 is 0."""
    bits = _bits(a)
    e = np.float32(((bits >> 23) & 0xFF) - 127)
    m = _float((bits & 0x7FFFFF) | 0x3F800000)                                                 # [1, 2)
    big = m > np.float32(1.4142135)
    m = m * np.float32(0.5) if big else m
    e = e + np.float32(1.0) if big else e
    f = m - np.float32(1.0)
    z = f * f
    y = np.float32(7.0376836292e-2) * f - np.float32(1.1514610310e-1)
    y = y * f + np.float32(1.1676998740e-1)
    y = y * f - np.float32(1.2420140846e-1)
    y = y * f + np.float32(1.4249322787e-1)
    y = y * f - np.float32(1.6668057665e-1)
    y = y * f + np.float32(2.0000714765e-1)
    y = y * f - np.float32(2.4999993993e-1)
    y = y * f + np.float32(3.3333331174e-1)
    y = y * f * z + np.float32(-2.12194440e-4) * e - np.float32(0.5) * z
    return f + y + np.float32(0.693359375) * e
