"""One attention head, step by step, and why the scores are divided by √d_k.

steps() takes a head's input X and its Q, K, V (from any model: the toy, the tiny decoder, or
BERT's own layers) and redoes the head's arithmetic one named step at a time, so each intermediate
can be drawn. entropy_vs_dk() is the variance argument as numbers: for unit-variance q and k
entries, q·k has variance d_k, so unscaled softmax rows collapse onto one key as d_k grows.
The Inside a head view's words on them (IDEA, scale_note, step_notes, check_notes, window_note,
with_and_without_mask, one_score) are written beside the numbers they read.
Nothing here runs a model or draws.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from analysis import masks
from analysis.tokens import readable
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

IDEA = ("A head turns each token's vector into a query, a key and a value. Each query is compared with every "
        "key (a dot product), the scores are scaled and, in a decoder, masked so no token sees the future; "
        "softmax turns each row into weights that sum to 1, and the output is the weighted mix of values. "
        "Each line below is one panel of **Step by step**, in order.")  # the idea in words, before explain_steps()


def explain_steps(head: HeadQKV | None = None) -> tuple[str, str]:
    """Every step at once, for the view's "How it works": the aligned LaTeX (under the whole formula) and the
    torch lines, each with a comment naming its panel ("s = q @ k.T  # QKᵀ"), ending with the library call that
    the last step equals. With `head`, the lines are its model's own: q and k norms and RoPE in the Q and K lines,
    a sliding window in the mask line, where the model has them."""
    lines = {**EXPLAIN, **(_own_lines(head) if head is not None else {})}
    whole = r"\mathrm{Attention}(Q,K,V) &= \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right) V \\[6pt]"
    math = r"\begin{aligned}" + whole + r" \\ ".join(f for f, _, _ in lines.values()) + r"\end{aligned}"
    width = max(len(code) for _, code, _ in lines.values())
    code = "\n".join(f"{code:<{width}}  # {name}" + (f": {note}" if note else "")
                     for name, (_, code, note) in lines.items())
    call = ("attn_mask=~(future | too_far)" if head is not None and head.causal and head.window
            else "is_causal=causal")
    return math, code + f"\n# z equals torch.nn.functional.scaled_dot_product_attention(q, k, v, {call})"


def _own_lines(head: HeadQKV) -> dict[str, tuple[str, str, str]]:
    """EXPLAIN's lines that this head's model computes otherwise: Q and K through its q/k norms (before RoPE) and
    RoPE, the causal mask with its sliding window."""
    lines = {}
    if head.qk_norm or head.rope:
        for name in ("Q", "K"):
            note = ", then ".join((["its own norm"] if head.qk_norm else []) + (["RoPE by position"] if head.rope
                                                                                    else []))
            tex, code = f"X W_{name}", f"x @ w_{name.lower()}"
            if head.qk_norm:
                tex, code = rf"\mathrm{{norm}}_{name}({tex})", f"norm_{name.lower()}({code})"
            if head.rope:
                tex, code = rf"\mathrm{{RoPE}}({tex})", f"rope({code})"
            lines[name] = (f"{name} &= {tex}", f"{name.lower()} = {code}", note)
    if head.causal and head.window:
        lines["mask"] = (rf"S'_{{ij}} &= -\infty \text{{ for }} j > i \text{{ or }} j \le i - {head.window}",
                         "s = s.masked_fill(future | too_far, float('-inf'))",
                         f"future[i, j] = j > i; too_far[i, j] = j <= i - {head.window}, the sliding window")
    return lines


def scale_factor(scale: bool | float, d_k: int) -> float:
    """What the scale step multiplies scores by (HeadQKV.scale): 1/√d_k (True), 1 (False) or the model's own factor
    (a float: Gemma's 1/√query_pre_attn_scalar, YaRN's attention factor over √d_k). (True, 64) -> 0.125"""
    if isinstance(scale, (bool, np.bool_)):
        return d_k ** -0.5 if scale else 1.0
    return float(scale)


def scale_label(scale: bool | float, d_k: int) -> str:
    """What the scale step does, as a figure's title says it: '÷√d_k', '× 0.0625' (a factor of the model's own) or
    'unscaled'."""
    if own_scale(scale):
        return f"× {scale_factor(scale, d_k):.4g}"
    return "÷√d_k" if scale else "unscaled"


def own_scale(scale: bool | float) -> bool:
    """Whether a head scales its scores by a factor of its own, neither 1/√d_k nor 1."""
    return not isinstance(scale, (bool, np.bool_))


def steps(x, q, k, v, scale: bool | float = True, causal: bool = False, window: int | None = None
          ) -> dict[str, np.ndarray]:
    """X (T, d), q, k (T, d_k), v (T, d_v) -> {"X", "Q", "K", "V", "QKᵀ", "÷√d_k", "mask", "softmax", "A·V"}
    as float32 arrays; "÷√d_k" is QKᵀ times scale_factor(scale) (equal to "QKᵀ" when scale is off, the model's own
    factor where it has one), "mask" equals it when causal is off (masked entries are -inf); a causal head with a
    sliding `window` of W tokens also masks keys W or more back."""
    q, k, v = (torch.tensor(np.asarray(t), dtype=torch.float32) for t in (q, k, v))  # copies: inputs may be shared
    T = q.shape[0]
    s = q @ k.T  # (T, T)
    scaled = s * scale_factor(scale, q.shape[-1])  # (T, T)
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
        q, k, v, attn_mask=allowed, scale=scale_factor(head.scale, q.shape[-1])
    )[0]  # (T, d_v)
    out = {"sdpa": float(np.abs(result["A·V"] - ref.numpy()).max())}
    if head.model_weights is not None:
        out["model"] = float(np.abs(result["softmax"] - head.model_weights).max())
    return out


def scale_note(curves: dict) -> str:
    """What entropy_vs_dk's curves show, in words, read off their largest d_k (the view's "Why divide by √d_k")."""
    return (f"With query and key entries of variance 1, q·k sums d_k products and has variance d_k "
            f"(measured: {curves['var_unscaled'][-1]:.0f} at d_k = {curves['d_k'][-1]}). Without the scale, softmax "
            f"rows collapse onto one key: mean largest weight {curves['max_weight_unscaled'][-1]:.2f} at "
            f"d_k = {curves['d_k'][-1]}, and gradients through it vanish. Dividing by √d_k keeps the variance at 1 "
            f"and the entropy near {curves['entropy_scaled'][-1]:.2f} nats for every d_k (uniform: "
            f"{curves['max_entropy']:.2f}).")


def source_note(head: HeadQKV) -> str:
    """Where a real model's head's Q, K and V come from: its own layers, then its q/k norms and RoPE where it has
    them, and the key/value head it reads (grouped-query attention)."""
    return ("Q, K and V are the real model's own query/key/value layers applied to the layer's input"
            + ("; its q and k norms have then normed Q and K" if head.qk_norm else "")
            + ("; RoPE has rotated Q and K by position" if head.rope else "")
            + (f", and this head reads key/value head {head.kv_head}." if head.kv_head is not None else "."))


def step_notes(head: HeadQKV) -> list[str]:
    """What the scale and mask steps do to this head's scores, where that needs saying: nothing (scaling off, no
    causal mask), or a sliding window besides the causal mask; [] for a plain scaled causal head."""
    d_k = np.asarray(head.q).shape[-1]
    notes = ([f"This model scales its scores by its own factor, {scale_factor(head.scale, d_k):.4g}, not by "
              f"1/√d_k = {d_k ** -0.5:.4g} (such as Gemma's 1/√query_pre_attn_scalar or YaRN's attention factor): the "
              "÷√d_k step multiplies by it, as the model does."] if own_scale(head.scale) else
             [] if head.scale else ["Scaling is off: the ÷√d_k step leaves the scores unchanged."])
    if not head.causal:
        notes.append("No causal mask here: the mask step leaves the scores unchanged.")
    elif head.window:
        notes.append(f"This layer attends within a sliding window of {head.window} tokens: the mask step also hides "
                     f"every key {head.window} or more positions before its query.")
    return notes


def check_notes(gaps: dict[str, float]) -> list[str]:
    """checks()'s gaps as sentences: against SDPA always, against the model's own weights where it gave them."""
    notes = [f"The last step equals torch.nn.functional.scaled_dot_product_attention on the same Q, K, V "
             f"(largest difference {gaps['sdpa']:.1e})."]
    if "model" in gaps:
        notes.append(f"The softmax of the scaled, masked QKᵀ from the model's Q and K equals the model's own attention "
                     f"weights (largest difference {gaps['model']:.1e}).")
    return notes


def window_note(tokens: list[str], start: int, size: int) -> str:
    """What a window of `size` tokens from start shows of a longer text, and why its rows may sum to less than 1."""
    return (f"This text has {len(tokens)} tokens; the panels show tokens {start}–{start + size - 1} "
            f"(“{readable(tokens[start])}” to “{readable(tokens[start + size - 1])}”). Every number is computed on "
            "the whole text, so a softmax row here may sum to less than 1: the rest of its weight lies outside "
            "the window.")


def with_and_without_mask(head: HeadQKV, start: int, size: int) -> tuple[np.ndarray, np.ndarray, str]:
    """The head's softmax without and with the causal mask (its window kept), on `size` tokens from start
    [size, size] each, and a sentence on which of the two the model really uses."""
    bidir, causal = (window(steps(head.x, head.q, head.k, head.v, head.scale, c, head.window), start,
                            size)["softmax"] for c in (False, True))
    return bidir, causal, ("Masked scores become −∞, so they get weight 0 and each row renormalises over the tokens "
                           "to its left. " + ("This model is a decoder, so the right panel is what it really uses."
                                              if head.causal else "This model is bidirectional: the right panel is "
                                                                  "what a mask would do."))


def one_score(head: HeadQKV, i: int, j: int) -> tuple[np.ndarray, np.ndarray, float, str]:
    """Query i's and key j's vectors [d_k] in float64, their score q·k (÷√d_k where the head scales) and a sentence:
    the d_k products q_d·k_d sum to the score, the cell (i, j) of QKᵀ (bertviz's neuron view, one pair at a time)."""
    q, k = np.asarray(head.q[i], np.float64), np.asarray(head.k[j], np.float64)  # (d_k,), (d_k,)
    factor = scale_factor(head.scale, len(q))
    score = float(q @ k) * factor
    return q, k, score, (f"{len(q)} products q_d·k_d; their sum is the score q·k, the cell ({i}, {j}) of QKᵀ"
                         + (f", scaled by the model's own {factor:.4g}." if own_scale(head.scale) else
                            ", scaled by 1/√d_k." if head.scale else ".")
                         + (" The causal mask then sets it to −∞: this key is after the query."
                            if head.causal and j > i else "")
                         + " Large products of one sign show the few dimensions that decide whether this query "
                           "finds this key.")
