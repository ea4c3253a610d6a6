"""KV-cache timing: what one generation measured step by step, cached against uncached, and MHA/GQA/MQA.

Drives models.generate.stream on any decoder here and keeps per-step timings, logits and cache sizes
(measured from the cache tensors). It never changes torch's thread count: a process-wide setting that
other sessions share; timings are taken with whatever threads the process runs on.

    rec = generate(net, prompt(cfg), 64, use_cache=True)     # tokens, logits, seconds, cache bytes per step
    compare(rec, generate(net, prompt(cfg), 64, use_cache=False))
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

import torch
import torch.nn as nn

from analysis.kv import kv_variants, late_over_early
from models.decoder import DEFAULT_CAP, PROMPT_LEN, DecoderConfig, build, flops, prompt
from models.generate import Step, stream


@dataclass
class Record:
    """What one generation measured, step by step (fill it with add, or take it from generate)."""
    tokens: list[int] = field(default_factory=list)
    logits: list[torch.Tensor] = field(default_factory=list)  # each (B, V) float32
    seconds: list[float] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)        # cached positions after each step, 0 without
    cache_bytes: list[int] = field(default_factory=list)      # measured from the cache tensors, 0 without

    def add(self, step: Step) -> None:
        self.tokens.append(step.token)
        self.logits.append(step.logits.float())
        self.seconds.append(step.seconds)
        self.positions.append(step.cache.seq_len() if step.cache is not None else 0)
        self.cache_bytes.append(step.cache.nbytes() if step.cache is not None else 0)


def generate(net: nn.Module, idx: torch.Tensor, max_new: int, use_cache: bool) -> Record:
    """All of stream at once."""
    record = Record()
    for step in stream(net, idx, max_new, use_cache):
        record.add(step)
    return record


def compare(cached: Record, uncached: Record) -> dict:
    """Total seconds of each, whether they wrote the same tokens, the largest logit difference, and how
    flat the cached per-token latency stayed (analysis.kv.late_over_early)."""
    n = min(len(cached.logits), len(uncached.logits))
    diff = (torch.stack(cached.logits[:n]) - torch.stack(uncached.logits[:n])).abs().max().item()
    return {"cached_s": sum(cached.seconds), "uncached_s": sum(uncached.seconds),
            "same_tokens": cached.tokens == uncached.tokens, "max_abs_logit_diff": diff,
            "late_over_early": late_over_early(cached.seconds)}


def generate_modes(progress, net: nn.Module, idx: torch.Tensor, max_new: int, records: dict[str, Record]) -> dict:
    """Fill records ({"cached": Record(), "uncached": Record()} or the cached one alone) in that order, calling
    progress(fraction) after every step (it may raise to stop); returns records. For a page's background job."""
    total = max_new * len(records)
    for m, (mode, rec) in enumerate(records.items()):
        for i, step in enumerate(stream(net, idx, max_new, mode == "cached")):
            rec.add(step)
            progress((m * max_new + i + 1) / total)
    return records


def variants_flops(cfg: DecoderConfig, n_new: int) -> float:
    """FLOPs measure_variants spends: one cached generation per variant."""
    kv_heads = kv_variants(cfg.heads).values()
    return sum(flops(replace(cfg, kv_heads=k), PROMPT_LEN, n_new, use_cache=True) for k in kv_heads)


def measure_variants(cfg: DecoderConfig, n_new: int, device: str = "cpu", cap: int = DEFAULT_CAP,
                     progress=None) -> list[dict]:
    """Cached generation of n_new tokens at cfg's size with MHA, GQA and MQA (analysis.kv.kv_variants):
    KV bytes per token measured from the final cache, and the median step after the prompt's.
    progress(fraction), when given, is called after each variant (it may raise to stop)."""
    rows, variants = [], kv_variants(cfg.heads)
    for kind, kv_heads in variants.items():
        c = replace(cfg, kv_heads=kv_heads)
        net = build(c, device, PROMPT_LEN + n_new, cap)
        rec = generate(net, prompt(c, device=device), n_new, use_cache=True)
        del net
        rows.append({"kind": kind, "kv_heads": kv_heads, "bytes_per_token": rec.cache_bytes[-1] // rec.positions[-1],
                     "median_ms": 1e3 * statistics.median(rec.seconds[1:])})  # the prompt's step excluded
        if progress is not None:
            progress(len(rows) / len(variants))
    return rows
