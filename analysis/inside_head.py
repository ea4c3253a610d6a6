"""One attention head, step by step, and why the scores are divided by √d_k.

steps() takes a head's input X and its Q, K, V (from any model: the toy, the tiny decoder, or
BERT's own layers) and redoes the head's arithmetic one named step at a time, so each intermediate
can be drawn. entropy_vs_dk() is the variance argument as numbers: for unit-variance q and k
entries, q·k has variance d_k, so unscaled softmax rows collapse onto one key as d_k grows.
Nothing here runs a model or draws.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from analysis import masks
from analysis.trace import HeadQKV

# step name -> (its line of the aligned LaTeX, the torch line that computes it in steps(), a note on that line)
EXPLAIN = {
    "X": (r"X &\in \mathbb{R}^{T \times d}", "x", "the head's input, one row per token"),
    "Q": (r"Q &= X W_Q", "q = x @ w_q", "BERT and tiny add b_q"),
    "K": (r"K &= X W_K", "k = x @ w_k", ""),
    "V": (r"V &= X W_V", "v = x @ w_v", ""),
    "QKᵀ": (r"S &= Q K^\top", "s = q @ k.T", ""),
    "÷√d_k": (r"S' &= S / \sqrt{d_k}", "s = s / math.sqrt(d_k)", ""),
    "mask": (r"S'_{ij} &= -\infty \text{ for } j > i \text{ (causal heads)}",
             "s = s.masked_fill(future, float('-inf'))", "future[i, j] = j > i; causal heads only"),
    "softmax": (r"A &= \mathrm{softmax}(S')\ \text{(each row)}", "a = s.softmax(dim=-1)", ""),
    "A·V": (r"Z &= A V", "z = a @ v", ""),
}


def explain_steps() -> tuple[str, str]:
    """Every step at once, for the view's "How it works": the aligned LaTeX (under the whole formula) and the
    torch lines, each with a comment naming its panel ("s = q @ k.T  # QKᵀ"), ending with the library call that
    the last step equals."""
    whole = r"\mathrm{Attention}(Q,K,V) &= \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right) V \\[6pt]"
    math = r"\begin{aligned}" + whole + r" \\ ".join(f for f, _, _ in EXPLAIN.values()) + r"\end{aligned}"
    width = max(len(code) for _, code, _ in EXPLAIN.values())
    code = "\n".join(f"{code:<{width}}  # {name}" + (f": {note}" if note else "")
                     for name, (_, code, note) in EXPLAIN.items())
    return math, code + "\n# z equals torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)"


def steps(x, q, k, v, scale: bool = True, causal: bool = False, window: int | None = None
          ) -> dict[str, np.ndarray]:
    """X (T, d), q, k (T, d_k), v (T, d_v) -> {"X", "Q", "K", "V", "QKᵀ", "÷√d_k", "mask", "softmax", "A·V"}
    as float32 arrays; "÷√d_k" equals "QKᵀ" when scale is off, "mask" equals it when causal is off
    (masked entries are -inf); a causal head with a sliding `window` of W tokens also masks keys W or more back."""
    q, k, v = (torch.tensor(np.asarray(t), dtype=torch.float32) for t in (q, k, v))  # copies: inputs may be shared
    T = q.shape[0]
    s = q @ k.T  # (T, T)
    scaled = s / math.sqrt(q.shape[-1]) if scale else s  # (T, T)
    masked = scaled.masked_fill(~masks.causal(T, window=window), float("-inf")) if causal else scaled
    a = masked.softmax(dim=-1)  # (T, T)
    z = a @ v  # (T, d_v)
    named = {"X": x, "Q": q, "K": k, "V": v, "QKᵀ": s, "÷√d_k": scaled, "mask": masked, "softmax": a, "A·V": z}
    return {name: np.asarray(t, dtype=np.float32) for name, t in named.items()}


def window(result: dict[str, np.ndarray], start: int, size: int) -> dict[str, np.ndarray]:
    """steps() output cut to tokens start .. start + size - 1: rows of every step, and the key columns of the
    T x T steps. Nothing is recomputed, so a softmax row keeps the weights it gave to keys outside the window
    (it sums to 1 over all T keys, not over the window's)."""
    rows = slice(start, start + size)
    square = ("QKᵀ", "÷√d_k", "mask", "softmax")
    return {name: (a[rows, rows] if name in square else a[rows]) for name, a in result.items()}


def row_entropy(p: np.ndarray) -> np.ndarray:
    """Entropy in nats of each row of a row-stochastic matrix: [[.5, .5], [1, 0]] -> [0.693, 0.]"""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return terms.sum(axis=-1)


def entropy_vs_dk(d_ks=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), n_keys: int = 16, n_queries: int = 512,
                  seed: int = 0) -> dict[str, np.ndarray]:
    """For each d_k: q, k with N(0, 1) entries; the variance of q·k and the mean row entropy and mean
    largest weight of softmax(QKᵀ) and of softmax(QKᵀ/√d_k). Uniform attention has entropy log(n_keys)."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for d in d_ks:
        q = torch.randn(n_queries, d, generator=g, dtype=torch.float64)  # (Nq, d)
        k = torch.randn(n_queries, n_keys, d, generator=g, dtype=torch.float64)  # (Nq, Nk, d): fresh keys per query
        s = torch.einsum("qd,qkd->qk", q, k)  # (Nq, Nk)
        raw, scaled = s.softmax(-1).numpy(), (s / math.sqrt(d)).softmax(-1).numpy()
        rows.append((s.var().item(), (s / math.sqrt(d)).var().item(), row_entropy(raw).mean(),
                     row_entropy(scaled).mean(), raw.max(-1).mean(), scaled.max(-1).mean()))
    cols = np.array(rows).T
    return {"d_k": np.array(d_ks), "var_unscaled": cols[0], "var_scaled": cols[1],
            "entropy_unscaled": cols[2], "entropy_scaled": cols[3],
            "max_weight_unscaled": cols[4], "max_weight_scaled": cols[5],
            "max_entropy": np.float64(math.log(n_keys))}


def checks(head: HeadQKV, result: dict) -> dict[str, float]:
    """Largest |difference| between steps() and independent paths: "sdpa" compares A·V with
    torch.nn.functional.scaled_dot_product_attention on the same q, k, v; "model" (when the head
    carries the model's own weights, as BERT's does) compares softmax with them."""
    q, k, v = (torch.tensor(np.asarray(t), dtype=torch.float32)[None] for t in (head.q, head.k, head.v))  # (1, T, d)
    allowed = masks.causal(q.shape[1], window=head.window) if head.causal else None  # (T, T)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=allowed, scale=None if head.scale else 1.0
    )[0]  # (T, d_v)
    out = {"sdpa": float(np.abs(result["A·V"] - ref.numpy()).max())}
    if head.model_weights is not None:
        out["model"] = float(np.abs(result["softmax"] - head.model_weights).max())
    return out
