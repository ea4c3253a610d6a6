"""Causal self-attention with shared key/value heads: the one attention module of every decoder written here.

n_kv_head key/value heads serve groups of n_head // n_kv_head query heads: MHA (n_kv_head = n_head),
GQA (a divisor of n_head) or MQA (1). One fused projection c_attn writes [q heads | k heads | v heads]
(nanoGPT's layout, which the tiny decoder was trained with and models.prune slices), c_proj mixes the
heads. Weights are computed explicitly and returned (annotated-transformer style), never kept on self.
It has no positions of its own (the model adds them) and does not use torch's fused attention.

    attn = CausalSelfAttention(d_model=64, n_head=4)
    y, att = attn(x, cache=None, layer=0)   # y (B, T, C), att (B, nh, T, T)
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from analysis.masks import causal
from models.kv_cache import KVCache


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, n_kv_head: int | None = None, bias: bool = True) -> None:
        super().__init__()
        self.n_head = n_head  # heads now: models.prune may remove some
        self.n_kv_head = n_kv_head or n_head
        self.head_size = d_model // n_head  # fixed by training, kept when heads go
        if n_head % self.n_kv_head:
            raise ValueError(f"{n_head} query heads cannot share {self.n_kv_head} key/value heads evenly.")
        self.c_attn = nn.Linear(d_model, (n_head + 2 * self.n_kv_head) * self.head_size, bias=bias)
        self.c_proj = nn.Linear(n_head * self.head_size, d_model, bias=bias)

    def qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, C) -> q (B, nh, T, hs), k and v (B, kvh, T, hs)"""
        B, T, _ = x.shape
        hs = self.head_size
        q, k, v = self.c_attn(x).split([self.n_head * hs, self.n_kv_head * hs, self.n_kv_head * hs], dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)      # (B, nh, T, hs)
        k = k.view(B, T, self.n_kv_head, hs).transpose(1, 2)   # (B, kvh, T, hs)
        v = v.view(B, T, self.n_kv_head, hs).transpose(1, 2)   # (B, kvh, T, hs)
        return q, k, v

    def forward(self, x: torch.Tensor, cache: KVCache | None, layer: int,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """mask (T, Tk) bool, optional, for this call only: pairs marked False are masked on top of the causal
        mask (a sparse pattern, experiments.sparse_models); None is the model exactly as trained."""
        B, T, _ = x.shape
        nh, kvh, hs = self.n_head, self.n_kv_head, self.head_size
        g = nh // kvh
        q, k, v = self.qkv(x)
        if cache is not None:
            k, v = cache.append(layer, k.contiguous(), v.contiguous())  # (B, kvh, Tk, hs)
        Tk = k.shape[2]
        # the g query heads of a group share one k, v: fold them into the row axis rather than copy k, v g times
        q = q.reshape(B, kvh, g * T, hs)                                          # (B, kvh, g*T, hs)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)                           # (B, kvh, g*T, Tk)
        allowed = causal(T, Tk, x.device)                                         # (T, Tk)
        if mask is not None:  # the diagonal is in every pattern, so no row is left empty
            allowed = allowed & mask.to(x.device)
        att = att.view(B, kvh, g, T, Tk).masked_fill(~allowed, float("-inf"))     # (B, kvh, g, T, Tk)
        att = F.softmax(att.view(B, kvh, g * T, Tk), dim=-1)                      # (B, kvh, g*T, Tk)
        y = (att @ v).view(B, nh, T, hs).transpose(1, 2).reshape(B, T, nh * hs)   # (B, T, nh*hs)
        return self.c_proj(y), att.view(B, nh, T, Tk)
