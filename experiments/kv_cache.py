"""KV-cache timing: what one generation measured step by step, cached against uncached, and MHA/GQA/MQA.

Drives models.generate.stream on any decoder here and keeps per-step timings, logits and cache sizes
(measured from the cache tensors). It never changes torch's thread count: a process-wide setting that
other sessions share; timings are taken with whatever threads the process runs on.

    rec = generate(net, prompt(cfg), 64, use_cache=True)     # tokens, logits, seconds, cache bytes per step
    compare(rec, generate(net, prompt(cfg), 64, use_cache=False))

What the KV cache view says of them (summary), the tiny decoder's cache step by step (tiny_steps) and a Hugging Face
decoder's own cache as it writes (write, formula) are here too; it draws nothing (viz/kv_cache.py draws).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn

from analysis.kv import (
    bytes_cached,
    cache_norms,
    cached_positions,
    human_bytes,
    kv_bytes_per_token,
    kv_variants,
    late_over_early,
    latent_bytes_per_token,
)
from data.sorting import END, MAX_DIGITS
from limits.errors import UserError
from models.decoder import DEFAULT_CAP, PROMPT_LEN, DecoderConfig, build, flops, prompt
from models.generate import Step, stream
from models.hf.writing import NO_CACHE


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


def warm_decoder(shape: tuple, dtype: str, device: str, total_len: int, cap: int) -> nn.Module:
    """A random decoder of shape (layers, d_model, heads, kv_heads), warmed up: its first calls pick kernels, so the
    generations timed after it do not pay for that."""
    net = build(DecoderConfig(*shape, dtype=dtype), device, total_len, cap)
    generate(net, prompt(net.cfg, device=device), 2, use_cache=True)
    return net


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


def measure_shape(progress, shape: tuple, dtype: str, device: str, n_new: int, cap: int) -> list[dict]:
    """measure_variants for a decoder of shape (layers, d_model, heads, kv_heads): a job's work, progress first."""
    return measure_variants(DecoderConfig(*shape, dtype=dtype), n_new, device, cap, progress)


def summary(records: dict[str, Record], per_token: int, n: int) -> str:
    """The cache measured from its tensors against the formula per_token × T; with both runs, the speed-up and
    whether the tokens agree (compare)."""
    T, measured = records["cached"].positions[-1], records["cached"].cache_bytes[-1]
    lines = [f"Cache after {T} positions: **{human_bytes(measured)}** measured from its tensors; the formula "
             f"gives {per_token:,} × {T} = {human_bytes(per_token * T)}."]
    if "uncached" in records:
        r, runs = compare(records["cached"], records["uncached"]), records["cached"].runs
        ratio = r["uncached_s"] / r["cached_s"]
        speed = (f"**{ratio:.1f}× faster** with the cache" if ratio >= 1 else
                 f"**{1 / ratio:.1f}× slower** with the cache (at this size its bookkeeping costs more than it saves)")
        lines.append(f"{n} tokens, the fastest of {runs} interleaved generation{'s' * (runs > 1)} of each: cached "
                     f"{r['cached_s']:.2f} s, uncached {r['uncached_s']:.2f} s: {speed}; same tokens: "
                     f"**{r['same_tokens']}**, largest logit difference {r['max_abs_logit_diff']:.1e}.")
    return " ".join(lines)


def tiny_steps(tiny, ids: list[int]):
    """After each token the tiny decoder (models.tiny) writes while sorting ids: (written so far, the cache's norms,
    positions cached, cache bytes)."""
    written = []
    for step in stream(tiny.net, torch.tensor([ids], device=tiny.device), MAX_DIGITS + 1, True, END):
        written.append(step.token)
        yield list(written), cache_norms(step.cache.keys, step.cache.values), step.cache.seq_len(), step.cache.nbytes()


@dataclass(frozen=True)
class Written:
    """What one greedy run wrote and what its cache held after each step."""
    prompt: list[int]
    written: list[int]
    positions: list[int]  # cached positions after each step
    measured: list[int]  # bytes of the cache's tensors after each step
    element_size: int
    norms: np.ndarray  # [2 * layers, T]: analysis.kv.cache_norms of the final cache
    notes: tuple[str, ...]
    states: list[int] = field(default_factory=list)  # a hybrid's: bytes of its other layers' states after each step


def write(dec, text: str, n: int) -> Written:
    """Greedy writing of n tokens after `text` by a Hugging Face decoder (models.hf.decoders), through its own
    cache: what it wrote and what the cache held after each step. UserError for a class that keeps no cache."""
    if not dec.takes_cache:
        raise UserError(NO_CACHE.format(cls=type(dec.model).__name__))
    ids, notes = dec.encode(text, room=n)
    positions, measured, written, states = [], [], [], []
    for step in dec.steps(ids, n, stop=dec.eos):
        written.append(step.token)
        positions.append(step.cache.seq_len())
        measured.append(step.cache.nbytes())
        states.append(step.cache.state_bytes())
        keys, values = step.cache.keys, step.cache.values
    return Written(ids[0].tolist(), written, positions, measured, keys[0].element_size(),
                   cache_norms(keys, values, positions[-1]), tuple(notes), states if any(states) else [])


def latent_of(dec) -> tuple[int, int] | None:
    """A decoder's (latent, rotary key) widths where its cache holds one latent per layer and position
    (models.hf.decoders.Decoder.latent_cache), else None (the built-ins, an encoder-decoder's decoder)."""
    return getattr(dec, "latent_cache", None)


def per_layer_position(dec, size: int) -> int:
    """The bytes the formula gives one layer's cache for one position: 2 · kv heads · head_dim · bytes, or a latent
    and a rotary key's (latent_of) bytes."""
    latent = latent_of(dec)
    return (kv_bytes_per_token(1, dec.kv_heads, dec.head_dim, size) if latent is None else
            latent_bytes_per_token(1, *latent, size))


def formula_bytes(dec, size: int, positions: int) -> int:
    """The bytes the formula gives a cache that has seen `positions` tokens, each layer keeping its window's."""
    return bytes_cached(positions, dec.windows, per_layer_position(dec, size))


def formula(dec, size: int, positions: int, noun: str = "layer") -> str:
    """The formula's clause, without a full stop, for a cache that has seen `positions` tokens: per token and layer
    2 · kv heads · head_dim · bytes, times the positions each layer keeps (all, or the last W - 1 under a W-token
    window): 'the formula says 4.5 KiB: 2 · 2 kv heads · 8 · 4 bytes = 128 per layer and position; 1 full-attention
    layer keeps all 33 positions and 1 layer with a 4-token sliding window keeps its last 3 (the next token's own
    key makes 4)'. dec: anything with n_layers, kv_heads, head_dim and windows (a Decoder; an encoder-decoder's decoder,
    whose layers `noun` names)."""
    per_layer, total, latent = per_layer_position(dec, size), formula_bytes(dec, size, positions), latent_of(dec)
    base = (f"the formula says {human_bytes(total)}: " + (
        f"2 · {dec.kv_heads} kv heads · {dec.head_dim} · {size} bytes" if latent is None else
        f"({latent[0]} latent + {latent[1]} rotary key) · {size} bytes") + f" = {per_layer:,} per layer and position"
        + ("" if latent is None else ", one latent shared by every head (multi-head latent attention caches it in "
           "place of each head's key and value)"))
    windowed = sorted({w for w in dec.windows if w is not None})
    if not windowed:
        return f"{base}, × {dec.n_layers} {noun}{'s' * (dec.n_layers != 1)} × {positions} positions"
    full = sum(w is None for w in dec.windows)
    parts = ([f"{full} full-attention {noun}{'s' * (full != 1)} keep{'s' * (full == 1)} all {positions} positions"]
             if full else [])
    for w in windowed:
        n = sum(x == w for x in dec.windows)
        parts.append(f"{n} {noun}{'s' * (n != 1)} with a {w}-token sliding window keep{'s' * (n == 1)} "
                     f"{'its' if n == 1 else 'their'} last {cached_positions(positions, w)}")
    return f"{base}; {' and '.join(parts)} (a {windowed[0]}-token window caches {windowed[0]} − 1 keys: the next " \
        f"token's own key makes {windowed[0]})"


@dataclass(frozen=True)
class WrittenEncDec:
    """What an encoder-decoder's decoder wrote greedily, and its two caches after each step: its self-attention's
    keys and values (one more position a step) and its cross-attention's (the encoder's tokens, made once)."""
    source: list[int]      # the encoder's input ids
    written: list[int]
    positions: list[int]   # positions the self-attention cache holds after each step
    measured: list[int]    # bytes of its tensors after each step
    cross: list[int]       # bytes of the cross-attention cache's tensors after each step
    element_size: int
    norms: np.ndarray      # [2 * layers, T]: analysis.kv.cache_norms of the final self-attention cache
    notes: tuple[str, ...]


def write_encdec(m, text: str, n: int) -> WrittenEncDec:
    """Greedy writing of up to n tokens by an encoder-decoder (models.hf.encdec) reading `text`, through its own
    EncoderDecoderCache (EncoderDecoder.cache_steps): what it wrote and what both caches held after each step."""
    if n < 1:
        raise UserError("Choose at least one token to write.")
    enc, notes = m.encode(text)
    written, positions, measured, cross = [], [], [], []
    for token, own, across in m.cache_steps(enc, n):
        written.append(token)
        positions.append(own.seq_len())
        measured.append(own.nbytes())
        cross.append(across.nbytes())
        keys, values = own.keys, own.values
    return WrittenEncDec(enc["input_ids"][0].tolist(), written, positions, measured, cross, keys[0].element_size(),
                         cache_norms(keys, values, positions[-1]), tuple(notes))


def formula_encdec(m, size: int, positions: int, source: int) -> str:
    """The formula's clause, without a full stop, for an encoder-decoder's two caches: its decoder's self-attention
    cache as formula() says it (per decoder layer and position 2 · kv heads · head size · bytes, each layer's window
    kept), then its cross-attention cache, the encoder's tokens in every decoder layer, made at the first step and
    never grown."""
    layers, kv, hd = m.decoder_shape()
    per = kv_bytes_per_token(1, kv, hd, size)
    decoder = SimpleNamespace(n_layers=layers, kv_heads=kv, head_dim=hd, windows=m.decoder_windows())
    return (formula(decoder, size, positions, "decoder layer") + f". Its cross-attention keeps the keys and "
            f"values of the encoder's {source} tokens, made at the first step and never grown: {per:,} × {layers} × "
            f"{source} = {human_bytes(per * layers * source)}")
