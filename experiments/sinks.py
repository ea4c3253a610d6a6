"""Attention sinks and streaming (Xiao et al. 2023, StreamingLLM) measured on a real decoder.

Two measurements, both of a model the caller loaded (models.hf.decoders.Decoder, or the tiny decoder for
sink mass), neither changing it (no hooks, no attention switch, no train/eval change):

- `sink_mass(weights, k)`: from attention weights (the model's own output_attentions), the mass each layer
  and head puts on position 0 and on the first k positions, averaged over query positions, and the mass on
  position 0 per query position. `windows(dec, text)` cuts a long text into context-long windows, each
  starting as the tokenizer starts a text (<s>, <sink> or nothing), and `model_sink_mass` runs them.
- `score(dec, ids, cache)`: a long text scored token by token with one of four caches, per-token NLL,
  cache entries, cache bytes (from the tensors) and seconds per token:
      full              every key and value kept; positions 0..N-1 (past the training context, RoPE meets
                        positions it never saw)
      window            the W most recent tokens
      window_sinks      the first S tokens ("sinks") and the W most recent: at most S + W entries
      recompute         no cache: the last W tokens are encoded again from scratch every step
  As the paper does, a cache keeps keys *before* RoPE and rotates them with the position of their slot in
  the cache, not in the text: after evictions the sinks sit at 0..S-1 and the window right after them, so
  every position stays inside what the model was trained on. The forward pass here is functional: it reads
  the model's own modules (norms, projections, MLP, rotary table) and writes nothing to them. It is written
  for Llama-style decoders (Llama, Mistral, Qwen2: RoPE in every layer); others raise ValueError.

    dec = models.load("gpt")
    ids = long_ids(dec, 512)                                   # (1, 512) held-out Python reference
    run = score(dec, ids, "window_sinks", window=124, sinks=4)
    run.nll[-256:].mean(), max(run.entries)                    # <= 128 entries
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from data import python_reference
from data.sorting import HELDOUT_SEED, uniform_strings
from limits.errors import UserError
from models import layout
from models.hf.common import self_attentions

CACHES = ("full", "window", "window_sinks", "recompute")


# ---------------------------------------------------------------- sink mass


def sink_mass(weights: list[np.ndarray], k: int = 4) -> dict:
    """Attention on the first tokens, from causal weights: a list of (L, H, T, T) arrays (T may differ).

    Returns "first" (L, H): mean over queries 1.. of the weight on key 0; "first_k" (L, H): mean over queries
    k.. of the weight on keys 0..k-1; "per_position" (L, H, T_max): mean weight on key 0 at each query
    position (NaN where no window reached it); "uniform" (T_max,): 1 / (q + 1), what uniform causal attention
    would give; "uniform_first": its mean over the same queries as "first".
    """
    if not weights:
        raise UserError("No attention weights to measure: give a text of at least two tokens.")
    L, H = weights[0].shape[:2]
    t_max = max(w.shape[-1] for w in weights)
    pos_sum, pos_n = np.zeros((L, H, t_max)), np.zeros(t_max)
    k_sum, k_n = np.zeros((L, H)), 0
    for w in weights:
        w = np.asarray(w, dtype=np.float64)  # (L, H, T, T)
        T = w.shape[-1]
        pos_sum[..., :T] += w[..., :, 0]
        pos_n[:T] += 1
        if T > k:
            k_sum += w[..., k:, :k].sum(axis=-1).sum(axis=-1)
            k_n += T - k
    if t_max < 2:
        raise UserError("Sink mass needs at least two tokens: position 0 attends only to itself.")
    with np.errstate(invalid="ignore"):
        per_position = pos_sum / pos_n  # (L, H, T_max)
    first = pos_sum[..., 1:].sum(axis=-1) / pos_n[1:].sum()  # (L, H): every query 1.. of every window, equally
    uniform = 1.0 / np.arange(1, t_max + 1)
    return {"first": first, "first_k": k_sum / k_n if k_n else np.full((L, H), np.nan), "k": k,
            "per_position": per_position, "uniform": uniform,
            "uniform_first": float((uniform[1:] * pos_n[1:]).sum() / pos_n[1:].sum())}


def prefix_ids(dec) -> list[int]:
    """What the tokenizer puts before any text: [<s>] for gpt, [<sink>] for gpt-sink, [] for gpt-nobos."""
    with_special = dec.tokenizer("a")["input_ids"]
    plain = dec.tokenizer("a", add_special_tokens=False)["input_ids"]
    return with_special[: len(with_special) - len(plain)] if with_special[-len(plain):] == plain else []


def heldout_text() -> str:
    """The held-out Python reference topics (never trained on), one after another: about 8,400 gpt tokens."""
    return "\n\n".join(python_reference.documents("test"))


def long_ids(dec, n_tokens: int, text: str | None = None) -> torch.Tensor:
    """The first n_tokens of `text` (default: the held-out reference), as the tokenizer starts a text. -> (1, n)"""
    body = dec.tokenizer(text if text is not None else heldout_text(), add_special_tokens=False)["input_ids"]
    ids = (prefix_ids(dec) + body)[:n_tokens]
    return torch.tensor([ids], device=dec.device)


def windows(dec, n_windows: int, text: str | None = None, max_len: int = 256) -> torch.Tensor:
    """Non-overlapping windows of the model's context (at most max_len) over a long text, each starting with
    the tokenizer's prefix (as the model was trained to start a text). -> (N, context)"""
    context = min(dec.max_tokens, max_len)
    first = prefix_ids(dec)
    body = dec.tokenizer(text if text is not None else heldout_text(), add_special_tokens=False)["input_ids"]
    step = context - len(first)
    rows = [first + body[i:i + step] for i in range(0, len(body) - step + 1, step)][:n_windows]
    if not rows:
        raise UserError(f"The text is shorter than the model's {context} positions: give a longer text.")
    return torch.tensor(rows, device=dec.device)


@torch.no_grad()
def model_sink_mass(dec, n_windows: int, k: int = 4, text: str | None = None, max_len: int = 256,
                    progress: Callable[[float, str], None] | None = None) -> dict:
    """sink_mass of the model's own output_attentions over n_windows context-long windows of the text."""
    rows = windows(dec, n_windows, text, max_len)
    weights = []
    for i, row in enumerate(rows):
        attentions = self_attentions(dec.model, input_ids=row[None])  # a hybrid's: the layers that attend
        weights.append(torch.stack(attentions, dim=1)[0].float().cpu().numpy())  # (L, H, T, T)
        if progress:
            progress((i + 1) / len(rows), f"window {i + 1} of {len(rows)}")
    return sink_mass(weights, k) | {"windows": len(rows), "tokens": int(rows.numel())}


def tiny_sink_mass(tiny, n_strings: int = 32, k: int = 4) -> dict:
    """sink_mass of the tiny decoder (models.tiny) over held-out digit strings, prompt and answer: it reads
    nothing longer than 21 tokens, so its 'long windows' are these."""
    strings = uniform_strings(torch.Generator().manual_seed(HELDOUT_SEED), n_strings)
    weights = [tiny.attend(s).weights for s in strings]  # each (L, H, T, T)
    return sink_mass(weights, k) | {"windows": len(weights), "tokens": sum(w.shape[-1] for w in weights)}


# ---------------------------------------------------------------- streaming


class SinkCache:
    """Un-rotated keys and values per layer (B, kv_heads, n, head_dim); keeps the first `sinks` entries and the
    `window` most recent (window None: everything). Memory is measured from the tensors it holds."""

    def __init__(self, n_layers: int, window: int | None, sinks: int = 0) -> None:
        self.window, self.sinks = window, sinks
        self.keys: list[torch.Tensor | None] = [None] * n_layers
        self.values: list[torch.Tensor | None] = [None] * n_layers

    def add(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append (B, kvh, T_new, hd) and evict the oldest non-sink entries beyond sinks + window."""
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=2)  # (B, kvh, n + T_new, hd)
            v = torch.cat([self.values[layer], v], dim=2)
        if self.window is not None and k.shape[2] > self.sinks + self.window:
            keep = lambda t: torch.cat([t[:, :, :self.sinks], t[:, :, -self.window:]], dim=2)  # noqa: E731
            k, v = keep(k), keep(v)  # (B, kvh, sinks + window, hd)
        self.keys[layer], self.values[layer] = k, v
        return k, v

    def entries(self) -> int:
        return 0 if self.keys[0] is None else self.keys[0].shape[2]

    def nbytes(self) -> int:
        return sum(t.element_size() * t.numel() for t in self.keys + self.values if t is not None)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    """RoPE's pairing of the first and second half of a head's dimensions: [a, b] -> [-b, a]."""
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def check_llama_like(dec) -> None:
    """ValueError unless dec is a Hugging Face Llama-style language model (what forward() is written for)."""
    kind = layout.name(dec)
    if dec.family != "decoder" or not dec.lm or not layout.llama(dec):
        what = f"a {kind} model" if kind else "not a Hugging Face decoder"
        raise UserError(f"Streaming caches are written here for Llama-style language models (Llama, Mistral, "
                        f"Qwen2: RoPE in every layer), and this is {what}.")


@torch.no_grad()
def forward(dec, ids: torch.Tensor, cache: SinkCache, want_weights: bool = False):
    """Feed ids (1, T) through the decoder with `cache`, keys rotated by their slot in the cache.

    -> logits (1, T, V) and, when want_weights, per layer (1, H, T, n) attention weights over the cache.
    """
    inner = dec.model.model
    B, T = ids.shape
    x = inner.embed_tokens(ids)  # (B, T, C)
    nh, kvh, hd = dec.n_heads, dec.kv_heads, dec.head_dim
    weights = []
    for i, layer in enumerate(inner.layers):
        attn = layer.self_attn
        h = layer.input_layernorm(x)  # (B, T, C)
        q = attn.q_proj(h).view(B, T, nh, hd).transpose(1, 2)   # (B, nh, T, hd)
        k = attn.k_proj(h).view(B, T, kvh, hd).transpose(1, 2)  # (B, kvh, T, hd) before RoPE
        v = attn.v_proj(h).view(B, T, kvh, hd).transpose(1, 2)  # (B, kvh, T, hd)
        k, v = cache.add(i, k, v)  # (B, kvh, n, hd): sinks, then the window, un-rotated
        n = k.shape[2]
        if i == 0:  # every layer holds the same n slots: one rotary table per step
            cos, sin = inner.rotary_emb(x, torch.arange(n, device=ids.device)[None])  # (1, n, hd): slots 0..n-1
            cos, sin = cos[:, None], sin[:, None]  # (1, 1, n, hd)
            future = torch.arange(n, device=ids.device)[None] > torch.arange(n - T, n, device=ids.device)[:, None]
        k = k * cos + _rotate_half(k) * sin
        q = q * cos[:, :, n - T:] + _rotate_half(q) * sin[:, :, n - T:]  # the new tokens hold the last T slots
        k = k.repeat_interleave(nh // kvh, dim=1)  # (B, nh, n, hd): query head h reads kv head h // group
        v = v.repeat_interleave(nh // kvh, dim=1)
        scores = (q @ k.transpose(-2, -1)) * attn.scaling  # (B, nh, T, n)
        scores = scores.masked_fill(future, float("-inf"))  # future (T, n): causal inside the fed block
        p = torch.softmax(scores.float(), dim=-1).to(q.dtype)  # (B, nh, T, n)
        if want_weights:
            weights.append(p)
        out = (p @ v).transpose(1, 2).reshape(B, T, nh * hd)  # (B, T, C)
        x = x + attn.o_proj(out)
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    return dec.model.lm_head(inner.norm(x)), weights  # (B, T, V)


@dataclass
class Run:
    cache: str
    nll: np.ndarray        # (N - 1,) NLL of token t + 1 given tokens up to t
    entries: np.ndarray    # (N - 1,) key/value positions held after feeding token t (recompute: the window)
    nbytes: np.ndarray     # (N - 1,) bytes of those keys and values, from the tensors
    seconds: np.ndarray    # (N - 1,) wall time of each step

    def summary(self, half: bool = True) -> dict:
        """Mean NLL (over the last half of the text when half), perplexity, peak entries and bytes, ms per token."""
        tail = self.nll[len(self.nll) // 2:] if half else self.nll
        return {"nll": float(tail.mean()), "ppl": float(np.exp(tail.mean())), "peak_entries": int(self.entries.max()),
                "peak_bytes": int(self.nbytes.max()), "ms_per_token": float(1000 * np.median(self.seconds))}


def check_settings(n_tokens: int, window: int, sinks: int) -> None:
    """ValueError with one sentence for settings that cannot run."""
    if window < 1:
        raise UserError(f"The window must hold at least 1 token, not {window}.")
    if sinks < 0 or sinks > window:
        raise UserError(f"Keep between 0 and W = {window} sink tokens, not {sinks}: sinks are a few first tokens "
                        "beside a larger window.")
    if n_tokens < window:
        raise UserError(f"The text has {n_tokens} tokens, shorter than the window of {window}: every cache would "
                        "hold the whole text, so choose a smaller window or a longer text.")


@torch.no_grad()
def score(dec, ids: torch.Tensor, cache: str, window: int, sinks: int = 4,
          progress: Callable[[float, str], None] | None = None) -> Run:
    """Score ids (1, N) token by token with one of CACHES (see the module docstring)."""
    check_llama_like(dec)
    if cache not in CACHES:
        raise UserError(f"Unknown cache '{cache}': choose one of {', '.join(CACHES)}.")
    N = ids.shape[1]
    check_settings(N, window, sinks)
    kept = {"full": (None, 0), "window": (window, 0), "window_sinks": (window, sinks)}.get(cache)
    store = SinkCache(dec.n_layers, *kept) if kept else None
    nll, entries, nbytes, seconds = (np.zeros(N - 1) for _ in range(4))
    for t in range(N - 1):
        start = time.perf_counter()
        if store is not None:
            logits, _ = forward(dec, ids[:, t:t + 1], store)  # (1, 1, V)
            entries[t], nbytes[t] = store.entries(), store.nbytes()
        else:  # recompute: the last W tokens from scratch, at positions 0..W-1
            fresh = SinkCache(dec.n_layers, None)
            logits, _ = forward(dec, ids[:, max(0, t + 1 - window):t + 1], fresh)  # (1, w, V)
            entries[t], nbytes[t] = fresh.entries(), fresh.nbytes()
        logp = torch.log_softmax(logits[0, -1].float(), dim=-1)  # (V,)
        nll[t] = -logp[ids[0, t + 1]].item()
        seconds[t] = time.perf_counter() - start
        if progress and (t % 16 == 0 or t == N - 2):
            progress((t + 1) / (N - 1), f"{cache}: token {t + 1} of {N - 1}")
    return Run(cache, nll, entries, nbytes, seconds)


def score_all(dec, ids: torch.Tensor, window: int, sinks: int,
              progress: Callable[[float, str], None] | None = None) -> dict[str, Run]:
    """score() with every cache; progress covers all four."""
    runs = {}
    for i, cache in enumerate(CACHES):
        part = (lambda f, text, i=i: progress((i + f) / len(CACHES), text)) if progress else None
        runs[cache] = score(dec, ids, cache, window, sinks, part)
    return runs
