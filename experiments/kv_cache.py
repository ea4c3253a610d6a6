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
    runs: int = 0                                             # generations this record is the fastest of

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


ROUNDS = 3  # generations of each mode the speed-up is taken from: the fastest of each, interleaved


def generate_modes(progress, net: nn.Module, idx: torch.Tensor, max_new: int, records: dict[str, Record],
                   rounds: int = 1) -> dict:
    """Fill records ({"cached": Record(), "uncached": Record()} or the cached one alone): `rounds` generations of
    each, interleaved (cached, uncached, cached, uncached, ...) so that a load on the machine falls on both modes
    alike, and each record keeps its fastest generation, the least disturbed (the first fills it live). Calls
    progress(fraction) after every step (it may raise to stop); returns records. For a page's background job."""
    total, done = max_new * len(records) * rounds, 0
    for r in range(rounds):
        for mode, rec in records.items():
            run = rec if r == 0 else Record()
            for step in stream(net, idx, max_new, mode == "cached"):
                run.add(step)
                done += 1
                progress(done / total)
            rec.runs += 1
            if run is not rec and sum(run.seconds) < sum(rec.seconds):
                rec.tokens, rec.logits, rec.seconds = run.tokens, run.logits, run.seconds
                rec.positions, rec.cache_bytes = run.positions, run.cache_bytes
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
