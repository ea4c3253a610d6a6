"""The Hugging Face decoders with separate (or Phi-3's and Falcon's fused) q/k/v projections, as
models.circuit_layouts' pieces: the Llama layout (Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 1 to 3), OPT, GPT-J and
Falcon, plus the head-slicing helpers every layout shares and the default every layout inherits (Pieces: no cap on the
scores).

The Llama layout reads everything a family changes from the family's own modules: Gemma's √C-scaled embedding
(GemmaTextScaledWordEmbedding), its (1 + w) RMSNorm and GeLU MLP are the modules themselves; Phi-3's partial rotary
is its own apply_rotary_pos_emb, taken from its modeling file; only Qwen3's per-head q_norm / k_norm (Qwen3) and
Phi-3's fused qkv_proj (Phi3) are a subclass each. OPT (OPT): learned positions at offset 2, q scaled inside its
projection (so the score scale is 1), LayerNorm before attention and MLP, fc1/fc2 MLP.

Gemma 2 and 3 (Gemma2, Gemma3) norm each attention output and each MLP output before it joins the residual (sandwich
norms): a head's write is its share of its layer's normed output, the norm's factor taken in the same run.

What it does not do: dispatch or refuse (models.circuit_layouts.layout does; Gemma2 refuses an attention bias, which
its norm would scale differently in every run), OPT after LayerNorm (do_layer_norm_before=False) or with
project_in/out.

    lay = Qwen3(load("hf:<a Qwen3 folder>"))
    q, k, v = lay.qkv(0, x, x, x)       # x (B, H, T, C): every head reads the same residual
"""
from __future__ import annotations

import sys

import torch

from limits.errors import UserError
from models import final_norm


def heads_of(w: torch.Tensor, n: int) -> torch.Tensor:
    """A Linear weight (n * hd, C) -> (n, hd, C): head j's rows."""
    return w.view(n, -1, w.shape[-1])


def project(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """Each head's copy x (B, H, T, C) through its own rows w (H, hd, C) and bias (H, hd) -> (B, H, T, hd)."""
    out = torch.einsum("bhtc,hdc->bhtd", x, w)                              # (B, H, T, hd)
    return out if b is None else out + b[None, :, None]


def write_heads(w: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Each head's mixed values z (B, H, T, hd) through its columns of an output Linear's weight w (C, H * hd), no
    bias -> each head's write (B, H, T, C)."""
    return torch.einsum("bhtd,chd->bhtc", z, w.view(w.shape[0], z.shape[1], -1))  # (B, H, T, C)


def rows(p: torch.nn.Linear, n: int, pick: torch.Tensor | None = None):
    """A projection's weight and bias by head, (n, hd, C) and (n, hd) or None; pick (H,): the rows each query head
    reads (its key/value head)."""
    w, b = heads_of(p.weight, n), None if p.bias is None else p.bias.view(n, -1)
    return (w, b) if pick is None else (w[pick], None if b is None else b[pick])


class Pieces:
    """What every decoder layout shares: scores are not capped unless the layout says so (Gemma 2's softcap); a
    layout is taken for its family by name unless `by_shape` names the model type it was taken for by its modules'
    names (models.circuit_layouts.by_shape), whose pieces are then checked against the model's own logits before
    they are used (experiments.circuits)."""

    by_shape: str | None = None

    def softcap(self, layer: int) -> float | None:
        """c in c · tanh(scores / c) applied to the layer's scaled scores before the mask, or None."""
        return None


class Llama(Pieces):
    """transformers' Llama, Mistral, Qwen2 and Gemma: a norm, separate q/k/v projections, RoPE (the family's own
    apply_rotary_pos_emb) inside q and k, shared key/value heads, the block's MLP with its norm."""

    def __init__(self, dec) -> None:
        self.lm, self.base = dec.model, dec.model.base_model
        self.n_layers, self.n_heads, self.hd = dec.n_layers, dec.n_heads, dec.head_dim
        self.kv_of = torch.tensor(dec.kv_head_of)                           # (H,)
        self.kv_heads = dec.kv_heads
        self.has_mlp, self.parallel = True, False
        self.rope = sys.modules[type(self.base.layers[0].self_attn).__module__].apply_rotary_pos_emb

    def projections(self, layer: int):
        """[(w, b)] of q, k and v, each query head's own rows: (H, hd, C) and (H, hd) or None."""
        attn = self.base.layers[layer].self_attn
        return [rows(attn.q_proj, self.n_heads), rows(attn.k_proj, self.kv_heads, self.kv_of),
                rows(attn.v_proj, self.kv_heads, self.kv_of)]

    def head_norms(self, layer: int, q: torch.Tensor, k: torch.Tensor):
        """q, k (B, H, T, hd) after whatever the family does to each head before RoPE: nothing here."""
        return q, k

    def embed(self, ids):
        return self.base.embed_tokens(ids)                                  # (B, T, C)

    def attn_norm(self, layer: int) -> torch.nn.Module:
        """The norm the layer's heads read the residual through."""
        return self.base.layers[layer].input_layernorm

    def qkv(self, layer, xq, xk, xv):
        norm = self.attn_norm(layer)
        q, k, v = (project(norm(x), w, b) for x, (w, b) in zip((xq, xk, xv), self.projections(layer)))
        q, k = self.head_norms(layer, q, k)                                 # (B, H, T, hd) each
        positions = torch.arange(xq.shape[2], device=xq.device)[None]       # (1, T)
        cos, sin = self.rotary(layer, xq[:, 0], positions)                  # (1, T, rotary dims) each
        q, k = self.rope(q, k, cos, sin)                                    # (B, H, T, hd) each
        return q, k, v

    def rotary(self, layer: int, x: torch.Tensor, positions: torch.Tensor):
        """cos, sin of the positions for the layer's RoPE: one rotary embedding for every layer here."""
        return self.base.rotary_emb(x, positions)

    def scale(self, layer):
        return self.base.layers[layer].self_attn.scaling

    def write(self, layer, z):
        return write_heads(self.base.layers[layer].self_attn.o_proj.weight, z)  # (B, H, T, C)

    def bias(self, layer):
        return self.base.layers[layer].self_attn.o_proj.bias

    def mlp(self, layer, x):
        block = self.base.layers[layer]
        return block.mlp(block.post_attention_layernorm(x))                 # (B, T, C)

    def logits(self, x):
        return self.lm.lm_head(self.base.norm(x))                           # (B, V)


class Qwen3(Llama):
    """transformers' Qwen3: Llama's layout with an RMSNorm over each head's own q and k (q_norm, k_norm over hd)
    between the projection and RoPE."""

    def head_norms(self, layer, q, k):
        attn = self.base.layers[layer].self_attn
        return attn.q_norm(q), attn.k_norm(k)                               # (B, H, T, hd) each


class Gemma2(Llama):
    """transformers' Gemma 2: Llama's pieces with sandwich norms, each attention output and each MLP output normed
    before it joins the residual, its scores soft-capped (attn_logit_softcapping) and its logits capped. Head h's write
    is its share of its layer's normed attention output, W_O[:, h] z_h times the norm's factor γ / rms(Σ_h W_O[:, h]
    z_h) taken in the same run: a layer's heads sum to what the layer adds, and a head patched in moves the factor of
    its layer as the model's own norm does."""

    def __init__(self, dec) -> None:
        super().__init__(dec)
        if getattr(self.lm.config, "attention_bias", False):
            raise UserError("This Gemma adds a bias to its attention's output before norming it, so the bias is normed "
                            "with each run's heads and is not the same in every run, as circuits here need: pick a "
                            "Gemma without attention_bias.")

    def write(self, layer, z):
        w = super().write(layer, z)                                          # (B, H, T, C)
        post = self.base.layers[layer].post_attention_layernorm
        return w * final_norm.rms_factor(post, w.sum(1, keepdim=True))      # (B, H, T, C)

    def softcap(self, layer):
        return self.base.layers[layer].self_attn.attn_logit_softcapping

    def mlp(self, layer, x):
        block = self.base.layers[layer]
        return block.post_feedforward_layernorm(block.mlp(block.pre_feedforward_layernorm(x)))  # (B, T, C)

    def logits(self, x):
        out, cap = super().logits(x), self.lm.config.final_logit_softcapping  # (B, V)
        return out if cap is None else cap * torch.tanh(out / cap)


class Gemma3(Gemma2):
    """transformers' Gemma 3: Gemma 2's pieces with an RMSNorm over each head's q and k (q_norm, k_norm) before RoPE,
    and RoPE of each layer's own kind (a local base on its sliding layers)."""

    head_norms = Qwen3.head_norms

    def rotary(self, layer, x, positions):
        return self.base.rotary_emb(x, positions, self.base.layers[layer].self_attn.layer_type)


class Phi3(Llama):
    """transformers' Phi-3: Llama's layout with one fused qkv_proj ([q heads | k heads | v heads] rows) and a fused
    gate_up_proj inside its MLP module; partial rotary comes with its own apply_rotary_pos_emb."""

    def projections(self, layer):
        p = self.base.layers[layer].self_attn.qkv_proj
        H, kvh, kv = self.n_heads, self.kv_heads, self.kv_of
        sizes = [H * self.hd, kvh * self.hd, kvh * self.hd]
        ws = [heads_of(w, n) for w, n in zip(p.weight.split(sizes), (H, kvh, kvh))]  # (n, hd, C) each
        bs = ([None] * 3 if p.bias is None
              else [b.view(n, -1) for b, n in zip(p.bias.split(sizes), (H, kvh, kvh))])  # (n, hd) each
        return [(ws[0], bs[0]), (ws[1][kv], None if bs[1] is None else bs[1][kv]),
                (ws[2][kv], None if bs[2] is None else bs[2][kv])]


class OPT(Pieces):
    """transformers' OPT with LayerNorm before attention and MLP: learned positions read at position + 2, q scaled
    by 1/√hd inside its projection (as OPTAttention does, bias included), so the score scale is 1."""

    def __init__(self, dec) -> None:
        self.lm, self.base = dec.model, dec.model.base_model.decoder
        self.n_layers, self.n_heads, self.hd = dec.n_layers, dec.n_heads, dec.head_dim
        self.has_mlp, self.parallel = True, False

    def embed(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)[None]     # (1, T)
        return self.base.embed_tokens(ids) + self.base.embed_positions(None, position_ids=positions)  # (B, T, C)

    def qkv(self, layer, xq, xk, xv):
        block = self.base.layers[layer]
        attn, norm = block.self_attn, block.self_attn_layer_norm
        q, k, v = (project(norm(x), *rows(p, self.n_heads))
                   for x, p in zip((xq, xk, xv), (attn.q_proj, attn.k_proj, attn.v_proj)))  # (B, H, T, hd) each
        return q * attn.scaling, k, v

    def scale(self, layer):
        return 1.0

    def write(self, layer, z):
        return write_heads(self.base.layers[layer].self_attn.out_proj.weight, z)  # (B, H, T, C)

    def bias(self, layer):
        return self.base.layers[layer].self_attn.out_proj.bias

    def mlp(self, layer, x):
        block = self.base.layers[layer]
        return block.fc2(block.activation_fn(block.fc1(block.final_layer_norm(x))))  # (B, T, C)

    def logits(self, x):
        norm = self.base.final_layer_norm  # None where the config removed it (_remove_final_layer_norm)
        return self.lm.lm_head(x if norm is None else norm(x))              # (B, V)


class GPTJ(Pieces):
    """transformers' GPT-J: one LayerNorm (ln_1) that attention and MLP both read (a parallel residual), separate
    q/k/v projections without biases, GPT-J's rotary (pairs of neighbouring dimensions, on the first rotary_dim of
    each head, from its own embed_positions table and rotate_every_two), no bias on the output projection, and an
    unembedding with a bias."""

    def __init__(self, dec) -> None:
        self.lm, self.base = dec.model, dec.model.base_model
        self.n_layers, self.n_heads, self.hd = dec.n_layers, dec.n_heads, dec.head_dim
        self.has_mlp, self.parallel = True, True
        self.rotate = sys.modules[type(self.base.h[0].attn).__module__].rotate_every_two

    def embed(self, ids):
        return self.base.wte(ids)                                           # (B, T, C)

    def qkv(self, layer, xq, xk, xv):
        block = self.base.h[layer]
        attn = block.attn
        q, k, v = (project(block.ln_1(x), *rows(p, self.n_heads))
                   for x, p in zip((xq, xk, xv), (attn.q_proj, attn.k_proj, attn.v_proj)))  # (B, H, T, hd) each
        rot = attn.rotary_dim or self.hd
        sin, cos = attn.embed_positions[:xq.shape[2]].to(q.dtype).chunk(2, dim=-1)  # (T, rot / 2) each
        sin, cos = sin.repeat_interleave(2, -1), cos.repeat_interleave(2, -1)        # (T, rot) each

        def rope(t):                                                        # (B, H, T, hd)
            return torch.cat([t[..., :rot] * cos + self.rotate(t[..., :rot]) * sin, t[..., rot:]], dim=-1)
        return rope(q), rope(k), v

    def scale(self, layer):
        return 1 / self.base.h[layer].attn.scale_attn

    def write(self, layer, z):
        return write_heads(self.base.h[layer].attn.out_proj.weight, z)     # (B, H, T, C)

    def bias(self, layer):
        return self.base.h[layer].attn.out_proj.bias

    def mlp(self, layer, x):
        block = self.base.h[layer]
        return block.mlp(block.ln_1(x))                                     # (B, T, C): reads the layer's input

    def logits(self, x):
        return self.lm.lm_head(self.base.ln_f(x))                           # (B, V)


class Falcon(Llama):
    """transformers' Falcon with RoPE (ALiBi is refused by models.circuit_layouts.layout): one fused query_key_value
    split three ways (the new architecture's key/value groups, each [its queries | k | v]; multi-query's every query,
    then one k and one v; else each head's [q | k | v]), Llama-style RoPE from the model's rotary_emb, a dense
    output projection, and the MLP reading the layer's input (ln_mlp where there are two norms, else the attention's
    norm) when parallel, else post_attention_layernorm after the heads."""

    def __init__(self, dec) -> None:
        self.lm, self.base = dec.model, dec.model.base_model
        self.n_layers, self.n_heads, self.hd = dec.n_layers, dec.n_heads, dec.head_dim
        self.kv_of, self.kv_heads = torch.tensor(dec.kv_head_of), dec.kv_heads  # (H,), int
        cfg = self.lm.config
        self.has_mlp, self.parallel = True, bool(cfg.parallel_attn or cfg.new_decoder_architecture)
        self.rope = sys.modules[type(self.base.h[0].self_attention).__module__].apply_rotary_pos_emb

    def projections(self, layer):
        p, cfg = self.base.h[layer].self_attention.query_key_value, self.lm.config
        H, hd, kv = self.n_heads, self.hd, self.kv_of
        w = p.weight.view(-1, hd, p.weight.shape[-1])                         # (rows / hd, hd, C)
        b = None if p.bias is None else p.bias.view(-1, hd)                   # (rows / hd, hd)
        if cfg.new_decoder_architecture:  # groups of [H / kv queries | k | v]
            at = torch.arange(w.shape[0]).view(self.kv_heads, -1)             # (kv, H / kv + 2)
            q, k, v = at[:, :-2].flatten(), at[:, -2][kv], at[:, -1][kv]      # (H,) rows each query head reads
        elif cfg.multi_query:             # every query, then one k and one v
            q, k, v = torch.arange(H), torch.full((H,), H), torch.full((H,), H + 1)
        else:                             # each head's [q | k | v]
            q, k, v = (torch.arange(H) * 3 + i for i in range(3))
        return [(w[i], None if b is None else b[i]) for i in (q, k, v)]

    def attn_norm(self, layer):
        block = self.base.h[layer]
        return block.ln_attn if hasattr(block, "ln_attn") else block.input_layernorm

    def embed(self, ids):
        return self.base.word_embeddings(ids)                               # (B, T, C)

    def scale(self, layer):
        return self.base.h[layer].self_attention.inv_norm_factor

    def write(self, layer, z):
        return write_heads(self.base.h[layer].self_attention.dense.weight, z)  # (B, H, T, C)

    def bias(self, layer):
        return self.base.h[layer].self_attention.dense.bias

    def mlp(self, layer, x):
        block = self.base.h[layer]
        norm = (block.ln_mlp if hasattr(block, "ln_mlp") else block.input_layernorm if self.parallel
                else block.post_attention_layernorm)
        return block.mlp(norm(x))                                           # (B, T, C)

    def logits(self, x):
        return self.lm.lm_head(self.base.ln_f(x))                           # (B, V)


LAYOUTS = {"llama": Llama, "mistral": Llama, "qwen2": Llama, "gemma": Llama, "gemma2": Gemma2, "gemma3_text": Gemma3,
           "qwen3": Qwen3, "phi3": Phi3, "opt": OPT, "gptj": GPTJ, "falcon": Falcon}
