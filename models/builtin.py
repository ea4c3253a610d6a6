"""What the wrappers of the built-in decoders trained here (models.tiny.Tiny, models.induction.Induction) share:
the network placed on the device and dtype that really run, its shape in words, and one head's X, Q, K, V.

The network is a models.causal_lm.CausalLM with `cfg` (n_layer, n_head, n_embd) and attention_input(idx, layer),
the input of that layer's attention. It reads no weights (each wrapper does) and keeps no per-call state.

    class Tiny(BuiltinDecoder): ...
    tiny.shape()   # "2 layers x 4 heads, d_model 64, 101k parameters"
"""
from __future__ import annotations

import torch

from analysis.trace import HeadQKV
from models.devices import DTYPES, resolve


class BuiltinDecoder:
    net: torch.nn.Module   # a models.causal_lm.CausalLM
    device: str
    predicts = "next token"  # models.contract.PREDICTS: every decoder written here has its unembedding
    next_token_model = None  # models.contract: no transformers causal LM; its logits come from its own net
    tokenizer = None  # reads its own alphabet (digits, syllables)
    windows = ()
    kv_head_of = None

    def _place(self, net: torch.nn.Module, device: str, dtype: str) -> tuple[str, ...]:
        """Put `net` on the device and dtype that really run; the notices of any fallback (models.devices)."""
        self.device, dtype, notices = resolve(device, dtype)
        self.net = net.to(device=self.device, dtype=DTYPES[dtype])
        return notices

    def shape(self) -> str:
        cfg = self.net.cfg
        n_params = sum(p.numel() for p in self.net.parameters())
        return f"{cfg.n_layer} layers x {cfg.n_head} heads, d_model {cfg.n_embd}, {n_params / 1e3:.0f}k parameters"

    @torch.no_grad()
    def _head_qkv(self, ids: list[int], tokens: list[str], layer: int, head: int, own_weights: bool) -> HeadQKV:
        """Head `head` of `layer` over the token ids: X (T, C), q, k, v (T, hs), and when `own_weights` the
        attention module's own weights (T, T) to check the recompute against."""
        idx = torch.tensor([ids], device=self.device)                # (1, T)
        x = self.net.attention_input(idx, layer)                      # (1, T, C)
        attn = self.net.blocks[layer].attn
        q, k, v = attn.qkv(x)                                         # (1, nh, T, hs)
        att = attn(x, None, layer)[1] if own_weights else None        # (1, nh, T, T)
        as_np = lambda t: t.float().cpu().numpy()  # noqa: E731
        return HeadQKV(tokens=tokens, x=as_np(x[0]), q=as_np(q[0, head]), k=as_np(k[0, head]), v=as_np(v[0, head]),
                       model_weights=None if att is None else as_np(att[0, head]), scale=True, causal=True)
