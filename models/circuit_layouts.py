"""One decoder's pieces as pure functions of tensors, so experiments.circuits can give every head its own residual.

A layout exposes, from the model's own modules and weights (nothing copied, nothing hooked):

    embed(ids)            (B, T) -> (B, T, C)  token embedding, plus learned positions where the model has them
    qkv(l, xq, xk, xv)    each head's own residual copy (B, H, T, C) -> q, k, v (B, H, T, hd), normed, projected,
                          RoPE applied; with shared key/value heads, head h reads key/value head kv(h) of its own copy
    scale(l)              the score scale (1/√hd unless the model says otherwise)
    softcap(l)            c in c · tanh(scores / c) on the scaled scores (Gemma 2), else None (Pieces' default)
    write(l, z)           each head's mixed values z (B, H, T, hd) of one run, every head at once -> each head's
                          write (B, H, T, C), through its slice of the output projection, without the projection's
                          bias (Gemma 2 and 3: times the factor of the norm on the layer's summed writes)
    bias(l)               that bias (C,) or None: the same in every run, so it is in the residual but is no sender
    mlp(l, x)             the MLP of layer l with its norm: residual (B, T, C) -> its write (B, T, C); None: no MLP
    logits(x)             final norm and unembedding of the last position's residual (B, C) -> (B, V)

    parallel              True where attention and MLP read the same residual (GPT-NeoX): the MLP then does not
                          read its own layer's heads

for the decoders built here on models.attention (`induction`, `tiny`), GPT-2, GPT-NeoX (parallel residual or not,
partial rotary), and through models.circuit_families Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma (the built-in `gpt`
is a Llama), Gemma 2 and 3 (sandwich norms, softcaps), OPT, GPT-J (parallel residual, its own rotary) and Falcon (a
fused projection, RoPE), and by_shape any other decoder whose modules are named as Llama's (Mixtral, Qwen3-MoE,
OLMo, ...: checked against its own logits by experiments.circuits before use); through models.circuit_encdec BART,
mBART and Marian encoder-decoders (the built-in `seq2seq-transformer` is a Marian). It does not handle Falcon with
ALiBi, OPT normalised after the residual add or with project_in/out (OPT-350m), pruned Hugging Face exports or pruned
built-ins, or sliding windows shorter than the text: `layout(model, T)` says so in one sentence.

    lay = layout(load("gpt"), T=12)
    q, k, v = lay.qkv(0, x, x, x)       # x (B, H, T, C): every head reads the same residual
"""
from __future__ import annotations

import math
import sys

import torch

from limits.errors import UserError
from models import circuit_latent as latent
from models.circuit_families import LAYOUTS, Llama, Pieces, Qwen3, heads_of, project, write_heads


class Builtin(Pieces):
    """Decoders written here: models.causal_lm blocks (ln_1, attn, ln_2 and mlp unless attention-only)."""

    def __init__(self, net) -> None:
        if any(b.attn.n_head != net.cfg.n_head for b in net.blocks):
            raise UserError("Heads were pruned from this model, so its heads no longer line up with their names: "
                             "find circuits on the model it was pruned from.")
        self.net = net
        self.n_layers = len(net.blocks)
        self.n_heads = net.blocks[0].attn.n_head
        self.has_mlp = hasattr(net.blocks[0], "mlp")
        self.parallel = False

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.net.wte(ids) + self.net.wpe(torch.arange(ids.shape[1], device=ids.device))  # (B, T, C)

    def qkv(self, layer, xq, xk, xv):
        block = self.net.blocks[layer]
        attn = block.attn
        nh, kvh, hs = attn.n_head, attn.n_kv_head, attn.head_size
        kv_of = torch.arange(nh) // (nh // kvh)                             # (H,) the key/value head each reads
        w, b = attn.c_attn.weight, attn.c_attn.bias                         # ((nh + 2 kvh) hs, C)
        parts = [nh * hs, kvh * hs, kvh * hs]
        ws = [heads_of(p, n) for p, n in zip(w.split(parts), (nh, kvh, kvh))]   # (n, hs, C) each
        bs = [None] * 3 if b is None else [p.view(n, hs) for p, n in zip(b.split(parts), (nh, kvh, kvh))]
        q = project(block.ln_1(xq), ws[0], bs[0])                          # (B, H, T, hs)
        k = project(block.ln_1(xk), ws[1][kv_of], None if bs[1] is None else bs[1][kv_of])
        v = project(block.ln_1(xv), ws[2][kv_of], None if bs[2] is None else bs[2][kv_of])
        return q, k, v

    def scale(self, layer: int) -> float:
        return 1 / math.sqrt(self.net.blocks[layer].attn.head_size)

    def write(self, layer, z):
        return write_heads(self.net.blocks[layer].attn.c_proj.weight, z)     # (B, H, T, C)

    def bias(self, layer):
        return self.net.blocks[layer].attn.c_proj.bias

    def mlp(self, layer, x):
        block = self.net.blocks[layer]
        return block.mlp(block.ln_2(x)) if self.has_mlp else None          # (B, T, C)

    def logits(self, x):
        return self.net.lm_head(self.net.ln_f(x))                           # (B, V)


class GPT2(Pieces):
    """transformers' GPT-2: Conv1D weights (in, out), learned positions, LayerNorm."""

    def __init__(self, dec) -> None:
        self.lm, self.base = dec.model, dec.model.base_model
        self.n_layers, self.n_heads, self.hd = dec.n_layers, dec.n_heads, dec.head_dim
        self.has_mlp, self.parallel = True, False

    def embed(self, ids):
        return self.base.wte(ids) + self.base.wpe(torch.arange(ids.shape[1], device=ids.device))  # (B, T, C)

    def qkv(self, layer, xq, xk, xv):
        block = self.base.h[layer]
        w, b = block.attn.c_attn.weight, block.attn.c_attn.bias            # (C, 3C), (3C,)
        C, H = w.shape[0], self.n_heads
        out = []
        for i, x in enumerate((xq, xk, xv)):
            wi = w[:, i * C:(i + 1) * C].T.reshape(H, self.hd, C)            # (H, hd, C)
            out.append(project(block.ln_1(x), wi, b[i * C:(i + 1) * C].view(H, self.hd)))  # (B, H, T, hd)
        return tuple(out)

    def scale(self, layer):
        return 1 / math.sqrt(self.hd) if self.lm.config.scale_attn_weights else 1.0

    def write(self, layer, z):
        w = self.base.h[layer].attn.c_proj.weight                           # (H * hd, C)
        return torch.einsum("bhtd,hdc->bhtc", z, w.view(z.shape[1], self.hd, -1))  # (B, H, T, C)

    def bias(self, layer):
        return self.base.h[layer].attn.c_proj.bias

    def mlp(self, layer, x):
        block = self.base.h[layer]
        return block.mlp(block.ln_2(x))                                     # (B, T, C)

    def logits(self, x):
        return self.lm.lm_head(self.base.ln_f(x))                           # (B, V)


class GPTNeoX(Pieces):
    """transformers' GPT-NeoX (Pythia): LayerNorm, one fused projection with each head's [q | k | v] rows together,
    RoPE on the first rotary_ndims of each head only, and (use_parallel_residual) attention and MLP both reading the
    layer's input."""

    def __init__(self, dec) -> None:
        self.lm, self.base = dec.model, dec.model.base_model
        self.n_layers, self.n_heads, self.hd = dec.n_layers, dec.n_heads, dec.head_dim
        self.has_mlp, self.parallel = True, bool(self.lm.config.use_parallel_residual)

    def embed(self, ids):
        return self.base.embed_in(ids)                                      # (B, T, C)

    def qkv(self, layer, xq, xk, xv):
        from transformers.models.gpt_neox.modeling_gpt_neox import apply_rotary_pos_emb

        block = self.base.layers[layer]
        p, norm = block.attention.query_key_value, block.input_layernorm
        w = heads_of(p.weight, self.n_heads)                               # (H, 3 hd, C): [q | k | v] per head
        b = None if p.bias is None else p.bias.view(self.n_heads, -1)       # (H, 3 hd)
        q, k, v = (project(norm(x), w[:, i * self.hd:(i + 1) * self.hd],
                            None if b is None else b[:, i * self.hd:(i + 1) * self.hd])
                   for i, x in enumerate((xq, xk, xv)))                     # (B, H, T, hd) each
        positions = torch.arange(xq.shape[2], device=xq.device)[None]       # (1, T)
        cos, sin = self.base.rotary_emb(xq[:, 0], positions)                # (1, T, rotary_ndims) each
        q, k = apply_rotary_pos_emb(q, k, cos, sin)                         # rotates the first rotary_ndims only
        return q, k, v

    def scale(self, layer):
        return self.base.layers[layer].attention.scaling

    def write(self, layer, z):
        return write_heads(self.base.layers[layer].attention.dense.weight, z)  # (B, H, T, C)

    def bias(self, layer):
        return self.base.layers[layer].attention.dense.bias

    def mlp(self, layer, x):
        block = self.base.layers[layer]
        return block.mlp(block.post_attention_layernorm(x))                 # (B, T, C)

    def logits(self, x):
        return self.lm.get_output_embeddings()(self.base.final_layer_norm(x))  # (B, V)


# the hf: decoders traced here
FAMILIES = "GPT-2, GPT-NeoX, GPT-J, Falcon, Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma (1 to 3) or OPT"
# the modules a decoder of another name holds where they are Llama's (by_shape), on its base model and each layer
LLAMA_NAMES = (("embed_tokens", "norm", "rotary_emb"), ("input_layernorm", "post_attention_layernorm", "mlp"),
               ("q_proj", "k_proj", "v_proj", "o_proj"))


def _within_window(model, T: int, make):
    """make(model), or UserError where texts of T tokens are longer than the model's shortest sliding window (the
    pieces attend to every earlier token)."""
    window = min([w for w in getattr(model, "windows", []) if w] or [T])
    if T > window:
        raise UserError(f"These texts are longer than the model's {window}-token sliding window: shorten them.")
    return make(model)


def by_shape(model):
    """Llama's layout (Qwen3's, where each head's q and k are normed; models.circuit_latent's, where the attention is
    multi-head latent attention's modules) for a decoder of another name whose modules are named as Llama's
    (LLAMA_NAMES: Mixtral, Qwen2-MoE and Qwen3-MoE, OLMo, GLM, ERNIE 4.5, InternLM3, DeepSeek-V3, Mistral 4, ...),
    marked `by_shape` with its model type: the names say where its pieces are, not that it computes nothing else
    (Granite's multipliers, GLM-4's extra norm, SmolLM3's layers without RoPE: each refused), so experiments.circuits
    checks its pieces against its own logits before it uses them. None where a module is missing, its layers' attention
    differ in kind, or the family has no rotary function of its own that the layout calls."""
    lm = getattr(model, "model", None)
    base, layers = getattr(lm, "base_model", None), getattr(getattr(lm, "base_model", None), "layers", None)
    if not isinstance(layers, torch.nn.ModuleList) or getattr(lm, "lm_head", None) is None:
        return None
    on_base, on_layer, on_attn = LLAMA_NAMES
    if not all(isinstance(getattr(base, n, None), torch.nn.Module) for n in on_base):
        return None
    kinds = set()
    for block in layers:
        attn = getattr(block, "self_attn", None)
        if not all(isinstance(getattr(block, n, None), torch.nn.Module) for n in on_layer):
            return None
        kinds.add("llama" if all(isinstance(getattr(attn, n, None), torch.nn.Linear) for n in on_attn) else
                  "latent" if latent.named(attn) else None)
    if len(kinds) != 1 or None in kinds:
        return None
    rope = latent.rope_name(model.config) if kinds == {"latent"} else "apply_rotary_pos_emb"
    if not hasattr(sys.modules[type(attn).__module__], rope):
        return None
    made = (latent.Latent if kinds == {"latent"} else
            Qwen3 if isinstance(getattr(attn, "q_norm", None), torch.nn.Module) else Llama)(model)
    made.by_shape = model.config.model_type
    return made


def layout(model, T: int):
    """The layout of a loaded model for texts of T tokens, or UserError with one sentence saying why not."""
    if hasattr(model, "net") and hasattr(model.net, "blocks") and hasattr(model.net, "wpe"):
        return Builtin(model.net)
    cfg = getattr(model, "config", None)
    kind = getattr(cfg, "model_type", None)
    if getattr(model, "family", None) != "decoder" or kind is None:
        raise UserError("Circuits follow a decoder-only language model to its next token: pick 'gpt', "
                         f"'induction', 'tiny' or an hf: {FAMILIES} folder.")
    if getattr(cfg, "pruned_heads", None):
        raise UserError("This is a pruned export, whose heads are renumbered: find circuits on the model it was "
                         "pruned from.")
    if kind == "gpt2":
        if cfg.scale_attn_by_inverse_layer_idx or cfg.reorder_and_upcast_attn:
            raise UserError("This GPT-2 scales its scores by the layer index, which circuits here do not redo.")
        return GPT2(model)
    if kind == "falcon" and cfg.alibi:
        raise UserError("This Falcon adds ALiBi's bias to its scores in place of rotating q and k, which circuits "
                         "here do not redo: pick a Falcon with rotary positions (alibi false).")
    if kind == "opt" and not cfg.do_layer_norm_before:
        raise UserError("This OPT normalises after each residual add (do_layer_norm_before=False, as OPT-350m), so "
                         "its heads' writes do not add up there: pick another OPT size.")
    if kind == "opt" and cfg.word_embed_proj_dim != cfg.hidden_size:
        raise UserError("This OPT projects its embeddings in and out (word_embed_proj_dim differs from "
                         "hidden_size), which circuits here do not redo: pick another OPT size.")
    if kind in LAYOUTS:
        return _within_window(model, T, LAYOUTS[kind])
    if kind == "gpt_neox":
        return GPTNeoX(model)
    if (lay := by_shape(model)) is not None:
        return _within_window(model, T, lambda _: lay)
    raise UserError(f"Circuits are traced here for {FAMILIES} decoders, other decoders laid out as Llama (Mixtral, "
                     f"Qwen3-MoE, OLMo, ...), BART, mBART and Marian encoder-decoders and the built-ins, not {kind}: "
                     "pick one of those.")
