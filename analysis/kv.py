"""KV-cache arithmetic: bytes per token, MHA/GQA/MQA, and well-known models' published shapes.

What it does:
- kv_bytes_per_token(layers, kv_heads, head_dim, bytes): one k and one v vector per layer per kv head;
  latent_bytes_per_token the same for multi-head latent attention (one latent and one rotary key per layer);
  bytes_cached: a cache's bytes when each layer keeps its sliding window's positions.
- attention_kind / kv_variants: name a (heads, kv_heads) pair, and pick MHA, GQA and MQA for a head count.
- known_table: bytes per token and total at a context length for GPT-2 small, Llama-2-7B,
  Llama-3-8B and Falcon-7B (their published configs), plus any configs a caller adds.
- late_over_early: how much per-token latency grew from the start of a generation to its end.
- cache_norms: one number per cached vector, to draw a cache as it grows.

What it does not: run a model, allocate a cache, or draw. models/decoder.py measures real caches;
viz/kv_cache.py draws these numbers.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np
import torch


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_element: int) -> int:
    """2 (k and v) * layers * kv_heads * head_dim * bytes. Llama-2-7B in fp16: (32, 32, 128, 2) -> 524288"""
    return 2 * layers * kv_heads * head_dim * bytes_per_element


def cached_positions(positions: int, window: int | None) -> int:
    """Positions a layer's cache holds after `positions` tokens: all of them, or with a sliding window of W tokens
    the last W - 1 (the next token's own key makes W; transformers' DynamicSlidingWindowLayer). (33, 4) -> 3"""
    return positions if window is None else min(positions, window - 1)


def latent_bytes_per_token(layers: int, latent: int, rotary: int, bytes_per_element: int) -> int:
    """(latent + rotary) * layers * bytes: multi-head latent attention caches one compressed latent of its keys and
    values and one rotary key per layer and position, shared by every head, in place of each head's k and v.
    DeepSeek-V3 in bf16 (61, 512, 64, 2) -> 70272"""
    return (latent + rotary) * layers * bytes_per_element


def bytes_cached(positions: int, windows: list[int | None], per_layer: int) -> int:
    """Σ over layers of per_layer (one position's bytes in one layer) * cached_positions(positions, its window)."""
    return sum(per_layer * cached_positions(positions, w) for w in windows)


def attention_kind(heads: int, kv_heads: int) -> str:
    """(8, 8) -> 'MHA', (8, 2) -> 'GQA', (8, 1) -> 'MQA'"""
    if kv_heads == heads:
        return "MHA"
    return "MQA" if kv_heads == 1 else "GQA"


def kv_variants(heads: int) -> dict[str, int]:
    """kv_heads for MHA, GQA and MQA at this head count. 8 -> {'MHA': 8, 'GQA': 2, 'MQA': 1}

    GQA takes the divisor strictly between 1 and heads nearest to heads / 4 (Llama-3's ratio);
    a head count without one (1, 2, a prime) has no GQA entry.
    """
    inner = [d for d in range(2, heads) if heads % d == 0]
    out = {"MHA": heads}
    if inner:
        out["GQA"] = min(inner, key=lambda d: (abs(d - heads / 4), d))
    if heads > 1:
        out["MQA"] = 1
    return out


@dataclass(frozen=True)
class KVConfig:
    name: str
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    source: str = ""


# Published configurations (the models' config.json files and papers)
KNOWN = (
    KVConfig("GPT-2 small", 12, 12, 12, 64, "Radford et al. 2019; n_layer 12, n_head 12, n_embd 768"),
    KVConfig("Llama-2-7B", 32, 32, 32, 128, "Touvron et al. 2023; 32 layers, 32 heads, hidden 4096"),
    KVConfig("Llama-3-8B", 32, 32, 8, 128, "Meta 2024; 32 layers, 32 query heads, 8 kv heads, hidden 4096"),
    KVConfig("Falcon-7B", 32, 71, 1, 64, "TII 2023; 32 layers, 71 query heads, multi-query, hidden 4544"),
)


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB', 524288 -> '512 KiB', 1000 * 1024 -> '1000 KiB', 3 * 2**30 -> '3 GiB'"""
    units, i = ("B", "KiB", "MiB", "GiB", "TiB"), 0
    while abs(n) >= 1024 and i < len(units) - 1:
        n, i = n / 1024, i + 1
    return f"{int(n)} B" if i == 0 else f"{n:.3g} {units[i]}" if abs(n) < 1000 else f"{n:.0f} {units[i]}"


def known_table(context: int, bytes_per_element: int, extra: tuple[KVConfig, ...] = ()) -> list[dict]:
    """One row per configuration: shape, kind, KV bytes per token and for one sequence of `context` tokens."""
    rows = []
    for c in KNOWN + tuple(extra):
        per_token = kv_bytes_per_token(c.layers, c.kv_heads, c.head_dim, bytes_per_element)
        rows.append({
            "model": c.name, "layers": c.layers, "heads": c.heads, "kv_heads": c.kv_heads,
            "head_dim": c.head_dim, "kind": attention_kind(c.heads, c.kv_heads),
            "bytes_per_token": per_token, "per_token": human_bytes(per_token),
            "total_bytes": per_token * context, f"at {context:,} tokens": human_bytes(per_token * context),
        })
    return rows


def cache_norms(keys: list[torch.Tensor], values: list[torch.Tensor], positions: int | None = None) -> np.ndarray:
    """L2 norm of every cached k and v vector, averaged over batch and kv heads: [2 * layers, T], rows ordered
    layer 0 k, layer 0 v, layer 1 k, ...; T is `positions` (the tokens the cache has seen), else the longest
    layer's length. A layer that holds fewer (a sliding window keeps the last ones) is aligned right, so column t
    is position t, NaN where the layer dropped it."""
    rows = []
    for k, v in zip(keys, values):  # each (B, kvh, T_layer, hd)
        rows += [k.float().norm(dim=-1).mean(dim=(0, 1)), v.float().norm(dim=-1).mean(dim=(0, 1))]  # (T_layer,)
    T = positions or max(len(r) for r in rows)
    out = np.full((len(rows), T), np.nan, dtype=np.float32)  # (2L, T)
    for i, r in enumerate(rows):
        out[i, T - len(r):] = r.cpu().numpy()
    return out


def late_over_early(seconds: list[float], window: int = 100) -> float:
    """median(last w steps) / median(steps 10 .. 10 + w), w = min(window, (n - 10) // 2): 1.0 is flat.
    Steps before 10 are skipped (the prompt and warm-up); 512 steps -> last 100 over steps 10-110."""
    w = min(window, (len(seconds) - 10) // 2)
    if w < 1:
        raise ValueError(f"late_over_early needs at least 12 steps, got {len(seconds)}.")
    return statistics.median(seconds[-w:]) / statistics.median(seconds[10:10 + w])
