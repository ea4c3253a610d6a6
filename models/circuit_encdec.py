"""One encoder-decoder's pieces as pure functions of tensors, so experiments.circuits_encdec can give every head of
the encoder, the decoder and the cross-attention its own copy of the residual stream it reads.

Three stacks, named as AttentionTrace's parts: "enc" (the encoder's self-attention), "dec" (the decoder's causal
self-attention) and "cross" (the decoder's attention over the encoder: its query reads the decoder's stream, its
key and value the encoder's last output). A layout exposes, from the model's own modules (nothing copied, hooked):

    embed(stack, ids)          (B, T) -> (B, T, C)  scaled token embedding plus positions, "enc" or "dec"
    embed_norm(stack, x)       the norm after the embedding (BART, mBART), else x
    qkv(kind, l, xq, xk, xv)   each head's copy (B, H, T, C) -> q, k, v (B, H, T, hd); pre-norm models' norm inside
                               (for "cross" on the query only: its keys and values read the encoder's final output)
    scale(kind, l)             the score scale
    write(kind, l, z)          (B, H, T, hd) -> each head's write (B, H, T, C), without the output bias
    bias(kind, l)              that bias (C,) or None: in every copy, no sender
    post(kind, l, x)           the post-norm after the attention of `kind` (BART, Marian), else x
    mlp(stack, l, x)           the feed-forward's write (B, T, C) from its input (pre-norm models' norm inside)
    post_mlp(stack, l, x)      the post-norm after it, else x
    enc_final(x)               the encoder's last norm (mBART), else x: what cross keys and values read
    logits(x)                  the decoder's last norm, the unembedding and final_logits_bias: (B, C) -> (B, V)

for BART and Marian (post-norm: the norm after each residual sum) and mBART (pre-norm, with a last norm on each
stack); the built-in `seq2seq-transformer` is a Marian. It does not handle T5 (relative position biases, no
scaling), pruned exports, or weights without a language-model head: `layout(model)` says so in one sentence.

    lay = layout(load("seq2seq-transformer"))
    q, k, v = lay.qkv("cross", 0, x_dec, x_enc, x_enc)    # x_dec (B, H, T, C), x_enc (B, H, S, C)
"""
from __future__ import annotations

import torch

from limits.errors import UserError
from models import layout as names  # this module's own layout() reads an encoder-decoder's

FAMILIES = ("bart", "marian", "mbart")
PRE_NORM = ("mbart",)


def _project(x: torch.Tensor, lin: torch.nn.Linear, n: int) -> torch.Tensor:
    """Each head's copy x (B, H, T, C) through its rows of `lin` -> (B, H, T, hd)."""
    w = lin.weight.view(n, -1, lin.weight.shape[-1])                        # (H, hd, C)
    out = torch.einsum("bhtc,hdc->bhtd", x, w)                              # (B, H, T, hd)
    return out if lin.bias is None else out + lin.bias.view(n, -1)[None, :, None]


class Seq2Seq:
    """transformers' BART, mBART and Marian (encoder and decoder layers of the same shape, post- or pre-norm)."""

    def __init__(self, model) -> None:
        self.lm = model.model                                               # the *ForConditionalGeneration
        base = self.lm.get_encoder(), self.lm.get_decoder()
        self.stacks = {"enc": base[0], "dec": base[1]}
        cfg = self.lm.config
        self.kind, self.pre = cfg.model_type, cfg.model_type in PRE_NORM
        self.n_enc, self.n_dec = len(base[0].layers), len(base[1].layers)
        self.n_heads = cfg.encoder_attention_heads
        self.has_mlp = True

    def _attn(self, kind: str, layer: int):
        """(the attention module, its layer, the norm before (pre) or after (post) it)."""
        block = self.stacks["enc" if kind == "enc" else "dec"].layers[layer]
        attn = block.encoder_attn if kind == "cross" else block.self_attn
        norm = block.encoder_attn_layer_norm if kind == "cross" else block.self_attn_layer_norm
        return attn, block, norm

    def embed(self, stack: str, ids: torch.Tensor) -> torch.Tensor:
        s = self.stacks[stack]
        tokens = s.embed_tokens(ids)                                        # (B, T, C), BART's scaled inside
        if not hasattr(s.embed_tokens, "embed_scale"):
            tokens = tokens * getattr(s, "embed_scale", 1.0)                # Marian scales outside
        positions = s.embed_positions(ids.shape if self.kind == "marian" else ids)  # (T, C) or (B, T, C)
        return tokens + positions.to(tokens.dtype)                          # (B, T, C)

    def embed_norm(self, stack: str, x: torch.Tensor) -> torch.Tensor:
        norm = getattr(self.stacks[stack], "layernorm_embedding", None)
        return x if norm is None else norm(x)

    def qkv(self, kind, layer, xq, xk, xv):
        attn, _, norm = self._attn(kind, layer)
        H = self.n_heads
        if self.pre:
            xq = norm(xq)
            xk, xv = (xk, xv) if kind == "cross" else (norm(xk), norm(xv))
        return _project(xq, attn.q_proj, H), _project(xk, attn.k_proj, H), _project(xv, attn.v_proj, H)

    def scale(self, kind, layer) -> float:
        return self._attn(kind, layer)[0].scaling

    def write(self, kind, layer, z):
        w = self._attn(kind, layer)[0].out_proj.weight                      # (C, H * hd)
        return torch.einsum("bhtd,chd->bhtc", z, w.view(w.shape[0], z.shape[1], -1))  # (B, H, T, C)

    def bias(self, kind, layer):
        return self._attn(kind, layer)[0].out_proj.bias

    def post(self, kind, layer, x):
        return x if self.pre else self._attn(kind, layer)[2](x)

    def mlp(self, stack, layer, x):
        block = self.stacks[stack].layers[layer]
        if self.pre:
            x = block.final_layer_norm(x)
        return block.fc2(block.activation_fn(block.fc1(x)))                 # (B, T, C)

    def post_mlp(self, stack, layer, x):
        return x if self.pre else self.stacks[stack].layers[layer].final_layer_norm(x)

    def enc_final(self, x):
        norm = getattr(self.stacks["enc"], "layer_norm", None)
        return x if norm is None else norm(x)

    def logits(self, x):
        norm = getattr(self.stacks["dec"], "layer_norm", None)
        x = x if norm is None else norm(x)
        bias = getattr(self.lm, "final_logits_bias", None)
        out = self.lm.get_output_embeddings()(x)                            # (B, V)
        return out if bias is None else out + bias.to(out.dtype)


def layout(model) -> Seq2Seq:
    """The layout of a loaded encoder-decoder, or UserError with one sentence saying why not."""
    cfg = getattr(model, "config", None)
    kind = getattr(cfg, "model_type", None)
    if getattr(model, "family", None) != "encoder-decoder" or kind is None:
        raise UserError("This is not an encoder-decoder: pick 'seq2seq-transformer' or an hf: BART, mBART or "
                         "Marian folder.")
    if kind not in FAMILIES:
        raise UserError(f"Circuits are traced here for BART, mBART and Marian encoder-decoders (and "
                         f"'seq2seq-transformer'), not {names.name(model)}: pick one of those.")
    if not getattr(model, "lm", False):
        raise UserError("These weights hold no language-model head, so there is no written token to explain: load "
                         "a folder saved from a *ForConditionalGeneration model.")
    if getattr(cfg, "pruned_heads", None) or cfg.encoder_attention_heads != cfg.decoder_attention_heads:
        raise UserError("The encoder and decoder of this model have different head counts (or were pruned): "
                         "circuits here need one head count.")
    return Seq2Seq(model)
