"""Positional encodings as arrays: sinusoids, the rotation that shifts them, RoPE, learned tables.

What it does:
- sinusoidal(P, D): the fixed encodings of Vaswani et al. 2017, section 3.5, in float64.
- shift_matrix(k, D): the block-diagonal rotation M_k with PE(pos + k) = M_k PE(pos) for every pos.
- rope(x, positions): rotary position embedding (Su et al. 2021, RoFormer), interleaved pairs
  (2i, 2i+1) as in the paper; rope_scores shows q.k after rotation depends only on the offset.
- cosine_similarity / principal_components (both: structure): plain summaries of a learned [P, D] position table.
- self_attention / permutation_demo: attention with Q = K = V = X, with and without positions,
  to show why a transformer needs positions at all (attention is permutation-equivariant).
- EXPLAINED: the idea, formula and code line the Positional encodings view shows beside each of these.

What it does not: load models, tokenize, or draw. Callers pass in a learned table or word
vectors taken from a model; viz/positional.py draws the results.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from limits.errors import UserError

BASE = 10000.0  # the paper's 10000: wavelengths run from 2*pi to 10000 * 2*pi


def frequencies(d_model: int, base: float = BASE) -> np.ndarray:
    """Angular frequency of each sin/cos pair: w_i = 1 / base^(2i / d_model). [D/2], e.g. D=4 -> [1, 0.01]"""
    if d_model <= 0 or d_model % 2:
        raise UserError(f"d_model must be a positive even number (sin/cos pairs), not {d_model}.")
    return base ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)  # (D/2,)


def sinusoidal(n_positions: int, d_model: int, base: float = BASE) -> np.ndarray:
    """PE[pos, 2i] = sin(pos / base^(2i/D)), PE[pos, 2i+1] = cos(pos / base^(2i/D)). float64 [P, D]"""
    if n_positions <= 0:
        raise UserError(f"n_positions must be positive, not {n_positions}.")
    pos = np.arange(n_positions, dtype=np.float64)[:, None]  # (P, 1)
    angles = pos * frequencies(d_model, base)[None, :]  # (P, D/2)
    pe = np.empty((n_positions, d_model), dtype=np.float64)  # (P, D)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def wavelengths(d_model: int, base: float = BASE) -> np.ndarray:
    """Wavelength in positions of every dimension (both members of a pair share one). [D]"""
    return np.repeat(2 * np.pi / frequencies(d_model, base), 2)  # (D,)


def shift_matrix(k: int, d_model: int, base: float = BASE) -> np.ndarray:
    """M_k [D, D], block-diagonal 2x2 rotations [[cos wk, sin wk], [-sin wk, cos wk]].

    From sin(w(p+k)) = sin(wp)cos(wk) + cos(wp)sin(wk) and cos(w(p+k)) = cos(wp)cos(wk) - sin(wp)sin(wk):
    M_k does not depend on pos, which is why a linear layer can attend by relative offset.
    """
    angle = k * frequencies(d_model, base)  # (D/2,)
    c, s = np.cos(angle), np.sin(angle)
    m = np.zeros((d_model, d_model), dtype=np.float64)  # (D, D)
    even = np.arange(0, d_model, 2)
    m[even, even], m[even, even + 1] = c, s
    m[even + 1, even], m[even + 1, even + 1] = -s, c
    return m


def shift_error(k: int, n_positions: int, d_model: int, base: float = BASE) -> float:
    """max |PE(pos + k) - M_k PE(pos)| over every pos with pos + k < n_positions (float64)."""
    if not 0 < k < n_positions:
        raise UserError(f"offset k must be between 1 and {n_positions - 1}, not {k}.")
    pe = sinusoidal(n_positions, d_model, base)  # (P, D)
    shifted = pe[:-k] @ shift_matrix(k, d_model, base).T  # (P-k, D): row p is M_k PE(p)
    return float(np.abs(pe[k:] - shifted).max())


def dot_by_offset(offsets: np.ndarray, d_model: int, base: float = BASE) -> np.ndarray:
    """PE(pos) . PE(pos + k) = sum_i cos(w_i k), the same for every pos. [len(offsets)]"""
    k = np.asarray(offsets, dtype=np.float64)[:, None]  # (K, 1)
    return np.cos(k * frequencies(d_model, base)[None, :]).sum(axis=1)  # (K,)


def rope(x: torch.Tensor, positions: torch.Tensor, base: float = BASE) -> torch.Tensor:
    """Rotate each pair (x[2i], x[2i+1]) of the token at position m by the angle m * w_i.

    x: [..., T, D] queries or keys; positions: [T]. Returns the same shape and dtype.
    """
    d = x.shape[-1]
    freqs = torch.as_tensor(frequencies(d, base), dtype=x.dtype, device=x.device)  # (D/2,)
    angle = positions.to(x.dtype)[:, None] * freqs[None, :]  # (T, D/2)
    cos, sin = torch.cos(angle), torch.sin(angle)  # (T, D/2)
    x0, x1 = x[..., 0::2], x[..., 1::2]  # (..., T, D/2)
    out = torch.empty_like(x)
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out


def rope_scores(q: torch.Tensor, k: torch.Tensor, n_positions: int, base: float = BASE) -> torch.Tensor:
    """S[m, n] = rope(q at m) . rope(k at n) for one fixed query q [D] and key k [D]. [P, P]

    Each pair contributes |q_i||k_i| cos(angle_q - angle_k + (m - n) w_i): only m - n appears,
    so every diagonal of S is constant.
    """
    pos = torch.arange(n_positions)
    qs = rope(q.expand(n_positions, -1), pos, base)  # (P, D): q placed at every position
    ks = rope(k.expand(n_positions, -1), pos, base)  # (P, D)
    return qs @ ks.T  # (P, P)


def offset_spread(scores: torch.Tensor) -> float:
    """Largest gap between two entries on one diagonal of S [P, P]; 0 when S depends only on n - m."""
    p = scores.shape[0]
    diags = [torch.diagonal(scores, offset=o) for o in range(-(p - 1), p)]
    return max(float(d.max() - d.min()) for d in diags)


def cosine_similarity(table: np.ndarray) -> np.ndarray:
    """Cosine similarity between every pair of rows of a position table [P, D] -> [P, P]."""
    t = np.asarray(table, dtype=np.float64)
    unit = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)  # (P, D)
    return unit @ unit.T  # (P, P)


def principal_components(table: np.ndarray, n: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates of each row on the first n principal axes [P, n], and their share of variance [n]."""
    t = np.asarray(table, dtype=np.float64)
    centred = t - t.mean(axis=0, keepdims=True)  # (P, D)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)  # u (P, r), s (r,)
    explained = s**2 / np.sum(s**2)
    return u[:, :n] * s[:n], explained[:n]


def structure(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A position table's PC1/PC2 coordinates [P, 2], their share of variance [2] and its cosine similarities
    [P, P]: what the Learned tab draws of a table."""
    coords, explained = principal_components(table, 2)
    return coords, explained, cosine_similarity(table)


def self_attention(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One head with no weights at all: Q = K = V = x [T, D]. Returns (out [T, D], weights [T, T])."""
    scores = x @ x.T / math.sqrt(x.shape[-1])  # (T, T)
    weights = torch.softmax(scores, dim=-1)  # (T, T): rows sum to 1
    return weights @ x, weights  # (T, D), (T, T)


def repeated_token(tokens: list[str]) -> tuple[int, int] | None:
    """Positions of the first token that occurs twice: ['the', 'man', 'the'] -> (0, 2); None if none."""
    seen: dict[str, int] = {}
    for j, tok in enumerate(tokens):
        if tok in seen:
            return seen[tok], j
        seen[tok] = j
    return None


def permutation_demo(word_vectors: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Self-attention over static word vectors [T, D], without and with sinusoidal positions.

    Follows the paper's recipe: embeddings times sqrt(D), plus PE. Without positions a repeated
    word gets identical query, key and value, so its rows are identical wherever it stands.
    Returns {"without": (out, weights), "with": (out, weights)}.
    """
    t, d = word_vectors.shape
    x = word_vectors.to(torch.float64) * math.sqrt(d)  # (T, D)
    pe = torch.from_numpy(sinusoidal(t, d))  # (T, D)
    return {"without": self_attention(x), "with": self_attention(x + pe)}


# What the Positional encodings view says under each tab: (idea in words, the formula in LaTeX, the code line);
# "why"'s idea names the encoder whose word vectors it uses: .format(model=...)
EXPLAINED: dict[str, tuple[str, str, str]] = {
    "sinusoids": (
        "Each pair of dimensions is a sine and a cosine of the position at one frequency; frequencies fall "
        "geometrically, so early dimensions tick fast and late ones slowly, like the hands of a clock. "
        "The dot product of two encodings depends only on how far apart they are.",
        r"PE_{(pos,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right),\quad "
        r"PE_{(pos,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right),\quad "
        r"PE_{pos}\cdot PE_{pos+k} = \sum_i \cos(\omega_i k)",
        "angles = pos[:, None] / 10000 ** (np.arange(0, d, 2) / d)  # (P, D/2)\n"
        "pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)",
    ),
    "shift": (
        "Moving k positions forward turns every sin/cos pair by the same angle, whatever the position. "
        "So PE(pos+k) is one fixed matrix times PE(pos): a layer can learn to look k tokens away.",
        r"\begin{pmatrix}\sin\omega(p+k)\\ \cos\omega(p+k)\end{pmatrix} = "
        r"\begin{pmatrix}\cos\omega k & \sin\omega k\\ -\sin\omega k & \cos\omega k\end{pmatrix}"
        r"\begin{pmatrix}\sin\omega p\\ \cos\omega p\end{pmatrix}",
        "m[2i, 2i], m[2i, 2i+1] = cos(w*k), sin(w*k)\nm[2i+1, 2i], m[2i+1, 2i+1] = -sin(w*k), cos(w*k)",
    ),
    "learned": (
        "BERT learns one vector per position instead of using a formula. Neighbouring positions still end "
        "up similar (the bright diagonal band, with fainter parallel stripes: a periodic part), and "
        "consecutive positions form a continuous path on the first two principal components. Nothing in "
        "training asked for that order; position 0, always [CLS], is learned as a thing apart.",
        r"x_{pos} = E_{\text{word}}[t_{pos}] + E_{\text{pos}}[pos] + E_{\text{type}}[s_{pos}]",
        "table = model.embeddings.position_embeddings.weight  # (512, D)\n"
        "u, s, _ = np.linalg.svd(table - table.mean(0)); pcs = u[:, :2] * s[:2]",
    ),
    "rope": (
        "RoPE adds nothing to the embeddings: it rotates each pair of query and key dimensions by an "
        "angle proportional to the position. A dot product of two rotated vectors only sees the "
        "difference of the angles, so attention scores depend on the offset n \u2212 m, never on m itself.",
        r"\langle R_m q,\, R_n k\rangle = \langle q,\, R_{n-m} k\rangle,\quad "
        r"R_m = \operatorname{diag}\!\left(\begin{pmatrix}\cos m\omega_i & -\sin m\omega_i\\ "
        r"\sin m\omega_i & \cos m\omega_i\end{pmatrix}\right)",
        "x0, x1 = x[..., 0::2], x[..., 1::2]  # (T, D/2)\n"
        "out[..., 0::2] = x0 * cos - x1 * sin\nout[..., 1::2] = x0 * sin + x1 * cos",
    ),
    "why": (
        "Queries, keys and values are the {model} model's static word vectors (times \u221ad, as in the paper). "
        "A repeated word gets the same query, key and value wherever it stands, so its rows are identical: "
        "shuffling the words only shuffles the rows. Adding sinusoidal positions makes the copies different "
        "vectors, and each copy attends more to itself.",
        r"\mathrm{softmax}\!\left(\frac{XX^\top}{\sqrt d}\right)X,\qquad X = \sqrt d\,E[t] \;\;\text{or}\;\; "
        r"X = \sqrt d\,E[t] + PE",
        "x = words * math.sqrt(d)  # (T, D)\n"
        "w = torch.softmax(x @ x.T / math.sqrt(d), -1)  # (T, T)\nout = w @ x",
    ),
}
