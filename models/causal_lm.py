"""The parts every decoder-only model here shares: a pre-norm block and the embed -> blocks -> head pass.

The attention module is the model's own (it decides heads, kv heads and how the cache is used);
this file holds no attention and no weights of its own.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from models.kv_cache import KVCache


class Block(nn.Module):
    """x + attn(ln_1(x)), then + mlp(ln_2(x)); attn(x, cache, layer, mask) -> (out, weights)."""

    def __init__(self, d_model: int, attn: nn.Module) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = attn
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor, cache: KVCache | None, layer: int,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        a, att = self.attn(self.ln_1(x), cache, layer, mask)
        x = x + a
        return x + self.mlp(self.ln_2(x)), att


class CausalLM(nn.Module):
    """Token and position embeddings, blocks, final norm, LM head; subclasses build the blocks' attention."""

    def __init__(self, vocab_size: int, max_len: int, d_model: int, blocks: list[Block]) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(blocks)
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """idx (B, T) new tokens -> logits (B, T, V) and per-layer weights [(B, nh, T, T_past + T)].

        mask (T, T_past + T) bool, optional, for this call only: pairs it marks False are masked in every
        layer on top of the causal mask (a sparse pattern); None leaves the model exactly as trained.
        """
        start = 0 if cache is None else cache.seq_len()
        pos = torch.arange(start, start + idx.shape[1], device=idx.device)  # (T,)
        x = self.wte(idx) + self.wpe(pos)  # (B, T, C)
        atts = []
        for i, block in enumerate(self.blocks):
            x, att = block(x, cache, i, mask)
            atts.append(att)
        return self.lm_head(self.ln_f(x)), atts
