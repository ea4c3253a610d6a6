"""A tiny decoder-only transformer that sorts 1-10 digits: "31415=" -> "11345.".

nanoGPT's GPT cut down to 2 layers x 4 heads x d_model 64, with attention computed explicitly
so every layer returns its weights, and an explicit KVCache (models/kv_cache.py) for generation.
Its weights were trained by models/train_tiny.py and ship in models/weights/tiny.safetensors
(config and measured accuracy in the file's metadata). It does not train here, and it knows
nothing about text beyond the twelve symbols 0-9, '=' (answer follows) and '.' (answer ends).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from models.causal_lm import Block, CausalLM
from models.devices import DTYPES, resolve
from models.kv_cache import KVCache
from models.trace import AttentionTrace

VOCAB = "0123456789=."
SEP, END = VOCAB.index("="), VOCAB.index(".")
MAX_DIGITS = 10
WEIGHTS = Path(__file__).parent / "weights" / "tiny.safetensors"


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int = len(VOCAB)
    block_size: int = 2 * MAX_DIGITS + 2  # digits, '=', sorted digits, '.'
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head  # heads now: models.prune may remove some
        self.head_size = cfg.n_embd // cfg.n_head  # fixed by training, kept when heads go
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)

    def qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, C) -> q, k, v each (B, nh, T, hs)"""
        B, T, _ = x.shape
        q, k, v = self.c_attn(x).split(self.n_head * self.head_size, dim=2)  # (B, T, nh*hs) each
        return tuple(t.view(B, T, self.n_head, self.head_size).transpose(1, 2) for t in (q, k, v))

    def forward(self, x: torch.Tensor, cache: KVCache | None, layer: int,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, _ = x.shape
        q, k, v = self.qkv(x)  # (B, nh, T, hs)
        if cache is not None:
            k, v = cache.append(layer, k, v)  # (B, nh, T_past + T, hs)
        Tk = k.shape[2]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])  # (B, nh, T, Tk)
        # query i sits at absolute position Tk - T + i and may see keys up to there
        allowed = torch.ones(T, Tk, dtype=torch.bool, device=x.device).tril(diagonal=Tk - T)
        if mask is not None:  # a sparse pattern for this call only (T, Tk); the diagonal keeps every row alive
            allowed = allowed & mask.to(x.device)
        att = att.masked_fill(~allowed, float("-inf"))
        att = F.softmax(att, dim=-1)  # (B, nh, T, Tk)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, self.n_head * self.head_size)  # (B, T, nh*hs)
        return self.c_proj(y), att


class TinyDecoder(CausalLM):
    def __init__(self, cfg: TinyConfig) -> None:
        blocks = [Block(cfg.n_embd, CausalSelfAttention(cfg)) for _ in range(cfg.n_layer)]
        super().__init__(cfg.vocab_size, cfg.block_size, cfg.n_embd, blocks)
        self.cfg = cfg

    def attention_input(self, idx: torch.Tensor, layer: int) -> torch.Tensor:
        """The normalised residual stream entering `layer`'s attention: idx (B, T) -> (B, T, C)."""
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))  # (B, T, C)
        for block in self.blocks[:layer]:
            x, _ = block(x, None, 0)
        return self.blocks[layer].ln_1(x)

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new: int, use_cache: bool = True
                 ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor] | None]:
        """Greedy decoding until '.' or max_new tokens.

        Returns new tokens (B, n), step logits (B, n, V), and, with the cache, the attention rows of
        every position fed in: per layer (B, nh, T_fed, T_fed) with the upper triangle zero.
        """
        cache = KVCache(self.cfg.n_layer) if use_cache else None
        feed, new, step_logits, rows = idx, [], [], []
        for _ in range(max_new):
            logits, atts = self(feed, cache)  # (B, T_feed, V)
            if use_cache:
                rows.append(atts)
            last = logits[:, -1, :]  # (B, V)
            nxt = last.argmax(dim=-1, keepdim=True)  # (B, 1)
            new.append(nxt)
            step_logits.append(last)
            if (nxt == END).all():
                break
            feed = nxt if use_cache else torch.cat([idx] + new, dim=1)
        out, logits = torch.cat(new, dim=1), torch.stack(step_logits, dim=1)
        if not use_cache:
            return out, logits, None
        T = rows[-1][0].shape[-1]
        weights = [
            torch.cat([F.pad(r[layer], (0, T - r[layer].shape[-1])) for r in rows], dim=2)  # (B, nh, T, T)
            for layer in range(self.cfg.n_layer)
        ]
        return out, logits, weights


def encode(text: str) -> list[int]:
    """'31415' -> [3, 1, 4, 1, 5, 10]: the digits and the '=' that asks for the answer."""
    digits = "".join(text.split())
    if not digits:
        raise ValueError("Type 1 to 10 digits for the tiny decoder to sort, for example 31415.")
    if not digits.isascii() or not digits.isdigit():
        raise ValueError(
            f"The tiny decoder only sorts digits: type 1 to 10 digits such as 31415 (it answers 11345), not {text.strip()[:20]!r}."
        )
    if len(digits) > MAX_DIGITS:
        raise ValueError(
            f"The tiny decoder was trained on at most {MAX_DIGITS} digits; you typed {len(digits)}: shorten it, e.g. 31415."
        )
    return [VOCAB.index(c) for c in digits] + [SEP]


def read_weights(path: Path = WEIGHTS) -> tuple[TinyDecoder, dict]:
    """Build the decoder from a .safetensors file whose metadata holds its config and training record
    (or, for a file models.prune.export wrote, the pruned heads: those are sliced out before loading)."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    from models.prune import prune_heads

    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    cfg = TinyConfig(**json.loads(meta["config"]))
    model = prune_heads(TinyDecoder(cfg), json.loads(meta.get("pruned_heads", "{}")))
    model.load_state_dict(load_file(str(path)))
    return model.eval(), json.loads(meta.get("record", "{}"))


class Tiny:
    def __init__(self, device: str, dtype: str) -> None:
        self.device, dtype, self._notices = resolve(device, dtype)
        self.net, self.record = read_weights()
        self.net.to(device=self.device, dtype=DTYPES[dtype])
        cfg = self.net.cfg
        n_params = sum(p.numel() for p in self.net.parameters())
        self.label = (
            f"tiny decoder: {cfg.n_layer} layers x {cfg.n_head} heads, d_model {cfg.n_embd}, "
            f"{n_params / 1e3:.0f}k parameters, trained to sort 1-{MAX_DIGITS} digits "
            f"({100 * self.record['heldout_exact']:.2f}% exact on {self.record['heldout_n']:,} held-out strings)"
        )

    def run(self, text: str) -> tuple[list[int], list[int], list[torch.Tensor], bool]:
        """Prompt ids, answer ids (without '.'), per-layer causal weights (nh, T, T) over every position
        fed in, and whether the answer ended with '.'"""
        prompt = encode(text)
        idx = torch.tensor([prompt], device=self.device)  # (1, T0)
        new, _, weights = self.net.generate(idx, max_new=MAX_DIGITS + 1)
        gen = new[0].tolist()
        finished = gen[-1] == END
        return prompt, gen[:-1] if finished else gen, [w[0] for w in weights], finished

    def attend(self, text: str, text_b: str | None = None) -> AttentionTrace:
        prompt, answer, weights, finished = self.run(text)
        # the last token produced is never fed back, so it has no row: with '.' that loses nothing
        tokens = [VOCAB[i] for i in prompt + answer][: weights[0].shape[-1]]
        notices = self._notices if finished else self._notices + (
            f"The decoder did not end its answer within {MAX_DIGITS + 1} tokens; showing what it wrote.",
        )
        w = torch.stack(weights).float().cpu().numpy()  # (L, nh, T, T)
        return AttentionTrace(
            tokens=tokens, key_tokens=list(tokens), weights=w, kind="causal",
            output="".join(VOCAB[i] for i in answer), notices=notices,
        )

    def head_qkv(self, text: str, layer: int, head: int) -> dict:
        """Tokens, the attention input X (T, C) and head `head`'s q, k, v (T, hs) over prompt + answer."""
        prompt, answer, _, _ = self.run(text)
        idx = torch.tensor([prompt + answer], device=self.device)  # (1, T)
        with torch.no_grad():
            x = self.net.attention_input(idx, layer)  # (1, T, C)
            q, k, v = self.net.blocks[layer].attn.qkv(x)  # (1, nh, T, hs)
        as_np = lambda t: t.float().cpu().numpy()  # noqa: E731
        return {
            "tokens": [VOCAB[i] for i in prompt + answer], "x": as_np(x[0]),
            "q": as_np(q[0, head]), "k": as_np(k[0, head]), "v": as_np(v[0, head]),
            "scale": True, "causal": True,
        }


def load(name: str = "tiny", device: str = "cpu", dtype: str = "float32") -> Tiny:
    return Tiny(device, dtype)
