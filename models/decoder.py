"""A configurable causal decoder with random weights, to measure what a KV cache costs and saves.

The user sets layers, d_model, heads and kv_heads (MHA: kv_heads = heads; GQA: a divisor of heads;
MQA: 1), dtype and device. Weights are random from a fixed seed: latency and memory do not need
trained weights, so the tokens it writes mean nothing. Keys and values live in models/kv_cache.py's
KVCache, the same cache the trained tiny decoder (models/tiny.py) uses; models.generate.stream drives
either model and experiments.kv_cache times it.
Memory is estimated before anything is allocated and a configuration over the cap is refused.
It does not train, tokenize text, or use torch's fused attention (weights are returned explicitly).

    cfg = DecoderConfig(layers=4, d_model=256, heads=8, kv_heads=2)
    net = build(cfg)                                   # ValueError with a sentence if it would not fit
    logits, weights = net(prompt(cfg))                 # (1, 16, vocab), per layer (1, heads, 16, 16)
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from analysis.kv import human_bytes, kv_bytes_per_token
from limits.errors import UserError
from models.attention import CausalSelfAttention
from models.causal_lm import Block, CausalLM
from models.devices import DTYPES

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
                raise UserError(f"{name} must be at least 1, not {getattr(self, name)}.")
        if self.d_model % self.heads:
            raise UserError(f"d_model {self.d_model} does not split into {self.heads} heads: "
                            f"choose a head count that divides {self.d_model}, e.g. {_divisors(self.d_model)}.")
        if self.heads % self.kv_heads:
            raise UserError(f"kv_heads must divide heads: {self.heads} query heads cannot share {self.kv_heads} "
                            f"kv heads evenly; choose one of {_divisors(self.heads)}.")
        if self.dtype not in DTYPES:
            raise UserError(f"dtype {self.dtype!r} is not offered; choose one of {', '.join(DTYPES)}.")

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
        raise UserError(f"{total_len} positions exceed this decoder's {cfg.max_len}: generate fewer tokens.")
    est = estimate_bytes(cfg, total_len)
    limit, what = cap, f"the {human_bytes(cap)} cap"
    if device.startswith("cuda") and torch.cuda.is_available():
        free = torch.cuda.mem_get_info(torch.device(device))[0]
        if free < limit:
            limit, what = free, f"the {human_bytes(free)} free on {device}"
    if est["total"] > limit:
        raise UserError(
            f"This configuration would need about {human_bytes(est['total'])} (weights {human_bytes(est['weights'])}, "
            f"cache {human_bytes(est['cache'])}, temporaries {human_bytes(est['temporaries'])}), over {what}: "
            f"use fewer layers, a smaller d_model, fewer kv_heads or fewer tokens."
        )
    return est


class Decoder(CausalLM):
    """Same calling convention as models.tiny.TinyDecoder: forward(idx, cache) -> (logits, weights)."""

    def __init__(self, cfg: DecoderConfig) -> None:
        blocks = [Block(cfg.d_model, CausalSelfAttention(cfg.d_model, cfg.heads, cfg.kv_heads, bias=False))
                  for _ in range(cfg.layers)]
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
