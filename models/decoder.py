"""A configurable causal decoder with random weights, to measure what a KV cache costs and saves.

The user sets layers, d_model, heads and kv_heads (MHA: kv_heads = heads; GQA: a divisor of heads;
MQA: 1), dtype and device. Weights are random from a fixed seed: latency and memory do not need
trained weights, so the tokens it writes mean nothing. Keys and values live in models/kv_cache.py's
KVCache, the same cache the trained tiny decoder (models/tiny.py) uses; `stream` drives either model.
Memory is estimated before anything is allocated and a configuration over the cap is refused.
It does not train, tokenize text, or use torch's fused attention (weights are returned explicitly).

    cfg = DecoderConfig(layers=4, d_model=256, heads=8, kv_heads=2)
    net = build(cfg)                                   # ValueError with a sentence if it would not fit
    record = generate(net, prompt(cfg), 64, use_cache=True)   # tokens, logits, seconds, cache bytes per step
"""
from __future__ import annotations

import contextlib
import math
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from analysis.kv import human_bytes, kv_bytes_per_token, kv_variants, late_over_early
from models.causal_lm import Block, CausalLM
from models.devices import DTYPES
from models.kv_cache import KVCache

DEFAULT_CAP = 2 * 1024**3  # bytes a configuration may need (weights + cache + temporaries)
PROMPT_LEN = 16


@dataclass(frozen=True)
class DecoderConfig:
    layers: int = 4
    d_model: int = 256
    heads: int = 8
    kv_heads: int = 8
    vocab_size: int = 512
    max_len: int = 2048  # positions the embedding table holds
    dtype: str = "float32"
    seed: int = 0

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    def check(self) -> None:
        """Raise ValueError with one sentence a user can act on if the shape is impossible."""
        for name in ("layers", "d_model", "heads", "kv_heads", "vocab_size", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}.")
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} does not split into {self.heads} heads: "
                             f"choose a head count that divides {self.d_model}, e.g. {_divisors(self.d_model)}.")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads must divide heads: {self.heads} query heads cannot share {self.kv_heads} "
                             f"kv heads evenly; choose one of {_divisors(self.heads)}.")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r} is not offered; choose one of {', '.join(DTYPES)}.")

    def n_params(self) -> int:
        d, hd, L = self.d_model, self.head_dim, self.layers
        per_layer = d * d + d * 2 * self.kv_heads * hd + d * d + 8 * d * d + 5 * d + 4 * d  # q, kv, o, mlp, ln
        return (self.vocab_size + self.max_len) * d + L * per_layer + 2 * d + d * self.vocab_size


def _divisors(n: int) -> str:
    """12 -> '1, 2, 3, 4, 6 or 12'"""
    ds = [str(d) for d in range(1, n + 1) if n % d == 0]
    return ds[0] if len(ds) == 1 else ", ".join(ds[:-1]) + " or " + ds[-1]


def estimate_bytes(cfg: DecoderConfig, total_len: int, batch: int = 1) -> dict[str, int]:
    """Bytes before allocating: weights, the full cache at total_len, and one uncached forward's
    largest temporaries (scores, masked scores and softmax at (B, nh, T, T), plus the MLP's (B, T, 4C))."""
    size = DTYPES[cfg.dtype].itemsize
    weights = cfg.n_params() * size
    cache = kv_bytes_per_token(cfg.layers, cfg.kv_heads, cfg.head_dim, size) * total_len * batch
    temporaries = size * batch * total_len * (3 * cfg.heads * total_len + 8 * cfg.d_model)
    return {"weights": weights, "cache": cache, "temporaries": temporaries, "total": weights + cache + temporaries}


def flops(cfg: DecoderConfig, prompt_len: int, n_new: int, use_cache: bool) -> float:
    """Multiply-adds x 2 to generate n_new tokens: 2 * params per token fed (embeddings excluded)
    plus 4 * layers * d_model per query-key pair (scores and the weighted sum)."""
    matrices = cfg.layers * (10 * cfg.d_model**2 + 2 * cfg.d_model * cfg.kv_heads * cfg.head_dim)
    matrices += cfg.d_model * cfg.vocab_size
    total = 0.0
    for t in range(prompt_len, prompt_len + n_new):  # t: sequence length when this step runs
        fed = (prompt_len if t == prompt_len else 1) if use_cache else t
        total += 2 * matrices * fed + 4 * cfg.layers * cfg.d_model * fed * t
    return total


def check_fits(cfg: DecoderConfig, total_len: int, cap: int = DEFAULT_CAP, device: str = "cpu") -> dict[str, int]:
    """The estimate, or ValueError if it exceeds the cap (or, on CUDA, the free device memory)."""
    cfg.check()
    if total_len > cfg.max_len:
        raise ValueError(f"{total_len} positions exceed this decoder's {cfg.max_len}: generate fewer tokens.")
    est = estimate_bytes(cfg, total_len)
    limit, what = cap, f"the {human_bytes(cap)} cap"
    if device.startswith("cuda") and torch.cuda.is_available():
        free = torch.cuda.mem_get_info(torch.device(device))[0]
        if free < limit:
            limit, what = free, f"the {human_bytes(free)} free on {device}"
    if est["total"] > limit:
        raise ValueError(
            f"This configuration would need about {human_bytes(est['total'])} (weights {human_bytes(est['weights'])}, "
            f"cache {human_bytes(est['cache'])}, temporaries {human_bytes(est['temporaries'])}), over {what}: "
            f"use fewer layers, a smaller d_model, fewer kv_heads or fewer tokens."
        )
    return est


class Attention(nn.Module):
    """Causal attention with kv_heads key/value heads shared by groups of heads // kv_heads query heads."""

    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        self.nh, self.kvh, self.hd = cfg.heads, cfg.kv_heads, cfg.head_dim
        self.q = nn.Linear(cfg.d_model, cfg.heads * cfg.head_dim, bias=False)
        self.kv = nn.Linear(cfg.d_model, 2 * cfg.kv_heads * cfg.head_dim, bias=False)
        self.o = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, cache: KVCache | None, layer: int,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, C = x.shape
        g = self.nh // self.kvh
        q = self.q(x).view(B, T, self.nh, self.hd).transpose(1, 2)  # (B, nh, T, hd)
        k, v = self.kv(x).view(B, T, 2, self.kvh, self.hd).permute(2, 0, 3, 1, 4)  # (B, kvh, T, hd) each
        if cache is not None:
            k, v = cache.append(layer, k.contiguous(), v.contiguous())  # (B, kvh, Tk, hd)
        Tk = k.shape[2]
        # the g query heads of a group share one k, v: fold them into the row axis rather than copy k, v g times
        q = q.reshape(B, self.kvh, g * T, self.hd)  # (B, kvh, g*T, hd)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)  # (B, kvh, g*T, Tk)
        if T > 1 or mask is not None:  # query i sits at absolute position Tk - T + i and may see keys up to there
            allowed = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=Tk - T)  # (T, Tk)
            if mask is not None:  # a sparse pattern for this call only (T, Tk)
                allowed = allowed & mask.to(x.device)
            att = att.view(B, self.kvh, g, T, Tk).masked_fill(~allowed, float("-inf")).view(B, self.kvh, g * T, Tk)
        att = F.softmax(att, dim=-1)  # (B, kvh, g*T, Tk)
        y = (att @ v).view(B, self.nh, T, self.hd).transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.o(y), att.view(B, self.nh, T, Tk)


class Decoder(CausalLM):
    """Same calling convention as models.tiny.TinyDecoder: forward(idx, cache) -> (logits, weights)."""

    def __init__(self, cfg: DecoderConfig) -> None:
        blocks = [Block(cfg.d_model, Attention(cfg)) for _ in range(cfg.layers)]
        super().__init__(cfg.vocab_size, cfg.max_len, cfg.d_model, blocks)
        self.cfg = cfg


@torch.no_grad()
def build(cfg: DecoderConfig, device: str = "cpu", total_len: int = 0, cap: int = DEFAULT_CAP) -> Decoder:
    """A Decoder with weights drawn from cfg.seed (std 1/sqrt(fan_in), so logits are order 1 and greedy
    ties are rare; biases 0, LayerNorm gains 1), after checking that the weights, a cache of total_len
    positions and the temporaries fit (check_fits)."""
    check_fits(cfg, max(total_len, 1), cap, device)
    gen = torch.Generator().manual_seed(cfg.seed)
    net = Decoder(cfg)
    for name, p in net.named_parameters():  # every parameter set here, none left to torch's global seed
        if p.ndim == 2:
            p.normal_(0.0, 1.0 if name.startswith(("wte", "wpe")) else p.shape[1] ** -0.5, generator=gen)
        elif name.endswith("bias"):
            p.zero_()
    return net.to(device=device, dtype=DTYPES[cfg.dtype]).eval()


def prompt(cfg: DecoderConfig, length: int = PROMPT_LEN, device: str = "cpu") -> torch.Tensor:
    """A fixed random prompt (1, length) of token ids, drawn from cfg.seed."""
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    return torch.randint(cfg.vocab_size, (1, length), generator=gen).to(device)


@dataclass(frozen=True)
class Step:
    token: int            # the token chosen at this step (batch row 0)
    logits: torch.Tensor  # (B, V) the logits it was chosen from
    seconds: float        # wall time of this step's forward pass and argmax, device synchronised
    cache: KVCache | None  # the cache after this step (None without one); the same object every step


@contextlib.contextmanager
def one_thread(device: str) -> Iterator[None]:
    """On cpu, run the block on one torch thread and restore the count after: a one-token step is too
    small to split, and on a busy machine extra threads mostly wait for each other (steps of 1 ms became
    60 ms with 2 threads on 2 shared cores). torch's thread count is process-wide."""
    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def stream(net: nn.Module, idx: torch.Tensor, max_new: int, use_cache: bool, stop: int | None = None
           ) -> Iterator[Step]:
    """Greedy decoding one token at a time, yielding each Step as it happens.

    With the cache (preallocated for every position it will hold), the prompt is fed once and then one
    token per step; without it, every step runs the whole sequence so far. Works for any net with
    forward(idx, cache) and .blocks (Decoder, TinyDecoder).
    """
    # the last token is never fed back, so the cache holds at most T0 + max_new - 1 positions
    cache = KVCache(len(net.blocks), capacity=idx.shape[1] + max_new - 1) if use_cache else None
    seq, feed = idx, idx  # (B, T0)
    for _ in range(max_new):
        _sync(idx.device)
        start = time.perf_counter()
        logits, _ = net(feed, cache)  # (B, T_feed, V)
        last = logits[:, -1, :]  # (B, V)
        nxt = last.argmax(dim=-1, keepdim=True)  # (B, 1)
        _sync(idx.device)
        # a copy, not a view: a view would keep the whole (B, T, V) logits of every uncached step alive
        yield Step(int(nxt[0, 0]), last.clone(), time.perf_counter() - start, cache)
        if stop is not None and (nxt == stop).all():
            return
        seq = torch.cat([seq, nxt], dim=1)  # (B, T0 + n)
        feed = nxt if use_cache else seq


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


def measure_variants(cfg: DecoderConfig, n_new: int, device: str = "cpu", cap: int = DEFAULT_CAP) -> list[dict]:
    """Cached generation of n_new tokens at cfg's size with MHA, GQA and MQA (analysis.kv.kv_variants):
    KV bytes per token measured from the final cache, and the median step after the prompt's."""
    rows = []
    for kind, kv_heads in kv_variants(cfg.heads).items():
        c = replace(cfg, kv_heads=kv_heads)
        net = build(c, device, PROMPT_LEN + n_new, cap)
        rec = generate(net, prompt(c, device=device), n_new, use_cache=True)
        rows.append({"kind": kind, "kv_heads": kv_heads, "bytes_per_token": rec.cache_bytes[-1] // rec.positions[-1],
                     "median_ms": 1e3 * statistics.median(rec.seconds[1:])})  # the prompt's step excluded
    return rows
