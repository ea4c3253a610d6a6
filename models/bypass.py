"""One layer of a decoder whose attention bypasses transformers' registry, read from its own modules.

Falcon, GPT-J, BLOOM, MPT, CodeGen, GPT-Neo, XGLM and GPT-NeoX-Japanese compute their attention in their own
modeling code (transformers 5.23), so models.capture records nothing for them; they give their weights through
output_attentions and the rest is read here, per family, from the layer's own modules applied to the layer's input h
(hidden_states[l]):

    family   attention reads        values                                       output    MLP reads
    falcon   input_layernorm(h);    query_key_value: per head [q|k|v]; multi-    dense     x (parallel); ln_mlp(h)
             ln_attn(h) (new arch.) query [q_1..q_H|k|v]; new arch. per key/               (new arch.); or post_
                                    value group [its queries|k|v]                          attention_layernorm(mid)
    gptj     ln_1(h)                v_proj                                       out_proj  x (parallel)
    codegen  ln_1(h)                qkv_proj: 4 blocks (mp_num) of [q|v|k]       out_proj  x (parallel)
    bloom    input_layernorm(h)     query_key_value: per head [q|k|v]            dense     post_attention_layernorm(mid)
    mpt      norm_1(h)              Wqkv: [q|k|v], clamped at clip_qkv           out_proj  norm_2(mid)
    gpt_neo  ln_1(h)                attn.attention.v_proj                        out_proj  ln_2(mid)
    xglm     self_attn_layer_       v_proj                                       out_proj  final_layer_norm(mid)
             norm(h)
    gpt_neox input_layernorm(h)     query_key_value: per head [q|k|v]            dense     post_attention_layernorm(mid)
    _japanese

where mid = h + the attention's write; GPT-NeoX-Japanese's last layer adds a bias (dense_bias) after its attention
module returns, so its dense is what the heads' summed write is checked against (`writes`, `biased`). Post-norm
decoders (GPT-1, TrOCR, XLNet, BART's decoder...: models.layout.POST_NORM) are not here: models.layout.post_norm
refuses them. `layer()` returns each query head's values (never rotated: RoPE turns queries and keys, ALiBi biases the
scores), the output projection and a function giving the MLP's write, so models.residual can split the layer's write
into heads. It runs no attention
(the weights are the model's own), keeps nothing on the model and does not check itself: models.residual compares the
rebuilt residual with the model's.

    p = layer(lm, "falcon", 0, hidden_states[0][0])
    p.values.shape       # (H, T, hd)
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

FAMILIES = ("falcon", "gptj", "bloom", "mpt", "codegen", "gpt_neo", "xglm", "gpt_neox_japanese")
NAMES = "Falcon, GPT-J, BLOOM, MPT, CodeGen, GPT-Neo, XGLM and GPT-NeoX-Japanese"  # FAMILIES, as a sentence says them
_BLOCKS = {"mpt": "blocks", "xglm": "layers", "gpt_neox_japanese": "layers"}       # the layers' list (else h)
_FINAL = {"mpt": "norm_f", "xglm": "layer_norm", "gpt_neox_japanese": "final_layer_norm"}  # the final norm (else ln_f)


@dataclass(frozen=True)
class Layer:
    attention: torch.nn.Module              # the attention module (GPT-Neo's inner attn.attention)
    values: torch.Tensor                    # (H, T, hd) each query head's values
    w_o: torch.Tensor                       # (C, H * hd) the output projection's weight
    b_o: torch.Tensor | None                # (C,) its bias, or None
    mlp: Callable[[torch.Tensor], torch.Tensor]  # mid (C,) -> the MLP's write (C,), its last bias included
    writes: torch.nn.Module | None = None   # the module whose output (its first, where a tuple) is the heads' summed
    #                                         write: the attention module where None
    biased: bool = True                     # whether that output includes b_o (GPT-NeoX-Japanese's dense_bias is added
    #                                         by the layer, after its attention module)
    less_residual: bool = False             # that output is the residual plus the write (BLOOM split into
    #                                         pretraining_tp slices and slow_but_exact: no one dense call to read)


def why_not(cfg) -> str | None:
    """What in this config the split does not follow, or None: BLOOM's residual taken after the layer norm."""
    if getattr(cfg, "apply_residual_connection_post_layernorm", False):
        return (f"This {cfg.model_type} adds each layer's output to its normed input instead of to the residual "
                "stream (apply_residual_connection_post_layernorm), so its logit is not a sum of the layers' writes.")
    return None


def _heads(t: torch.Tensor, H: int) -> torch.Tensor:
    """(T, H * hd) -> (H, T, hd)"""
    return t.view(t.shape[0], H, -1).transpose(0, 1)


def _falcon(block, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Callable]:
    attn, cfg = block.self_attention, block.config
    two = hasattr(block, "ln_attn")  # new architecture with a norm each for attention and MLP
    x = (block.ln_attn if two else block.input_layernorm)(h)                # (T, C)
    H, hd = attn.num_heads, attn.head_dim
    fused = attn.query_key_value(x)                                         # (T, out)
    if cfg.new_decoder_architecture:  # per key/value group: its queries, then one key, one value
        v = fused.view(x.shape[0], -1, H // attn.num_kv_heads + 2, hd)[:, :, -1]  # (T, kv, hd)
        v = v.repeat_interleave(H // v.shape[1], dim=1)                    # (T, H, hd)
    elif cfg.multi_query:             # every query, then the one key and the one value
        v = fused.view(x.shape[0], H + 2, hd)[:, -1:].expand(-1, H, -1)    # (T, H, hd)
    else:                             # per head [q | k | v]
        v = fused.view(x.shape[0], H, 3, hd)[:, :, 2]                      # (T, H, hd)
    if two:
        reads = lambda mid: block.ln_mlp(h[-1])  # noqa: E731
    elif cfg.parallel_attn or cfg.new_decoder_architecture:
        reads = lambda mid: x[-1]  # noqa: E731
    else:
        reads = block.post_attention_layernorm
    return x, v.transpose(0, 1), lambda mid: block.mlp(reads(mid))


def layer(lm: torch.nn.Module, kind: str, index: int, h: torch.Tensor) -> Layer:
    """Layer `index` of the causal LM `lm` (a `kind` in FAMILIES) read at its input h (T, C)."""
    base = lm.base_model
    block = getattr(base, _BLOCKS.get(kind, "h"))[index]
    if kind == "falcon":
        x, v, mlp = _falcon(block, h)
        attn = block.self_attention
        return Layer(attn, v, attn.dense.weight, attn.dense.bias, mlp)
    if kind == "bloom":
        attn = block.self_attention
        x = block.input_layernorm(h)                                        # (T, C)
        v = attn.query_key_value(x).view(x.shape[0], attn.num_heads, 3, -1)[:, :, 2]  # (T, H, hd)
        # BLOOM's attention adds the residual itself, and in half precision that sum's rounding is as large as its
        # write, so its output projection (dense) is read, except where it is split into slices with no one call
        sliced = attn.pretraining_tp > 1 and attn.slow_but_exact
        return Layer(attn, v.transpose(0, 1), attn.dense.weight, attn.dense.bias,
                     lambda mid: block.mlp(block.post_attention_layernorm(mid), torch.zeros_like(mid)),
                     writes=None if sliced else attn.dense, less_residual=sliced)
    if kind == "xglm":
        attn = block.self_attn
        v = _heads(attn.v_proj(block.self_attn_layer_norm(h)), attn.num_heads)   # (H, T, hd)
        return Layer(attn, v, attn.out_proj.weight, attn.out_proj.bias,
                     lambda mid: block.fc2(block.activation_fn(block.fc1(block.final_layer_norm(mid)))))
    if kind == "gpt_neox_japanese":
        attn = block.attention
        qkv = attn.query_key_value(block.input_layernorm(h))                # (T, 3C) per head [q | k | v]
        v = qkv.view(h.shape[0], attn.num_attention_heads, 3, -1)[:, :, 2]  # (T, H, hd)
        return Layer(attn, v.transpose(0, 1), attn.dense.weight, attn.dense_bias,
                     lambda mid: block.mlp(block.post_attention_layernorm(mid)), writes=attn.dense, biased=False)
    if kind == "mpt":
        attn = block.attn
        qkv = attn.Wqkv(block.norm_1(h))                                   # (T, 3C)
        if attn.clip_qkv:
            qkv = qkv.clamp(min=-attn.clip_qkv, max=attn.clip_qkv)
        return Layer(attn, _heads(qkv.chunk(3, dim=-1)[2], attn.n_heads), attn.out_proj.weight, attn.out_proj.bias,
                     lambda mid: block.ffn(block.norm_2(mid), torch.zeros_like(mid)))
    attn = block.attn.attention if kind == "gpt_neo" else block.attn
    x = block.ln_1(h)                                                       # (T, C)
    if kind == "codegen":  # 4 blocks (mp_num), each [q | v | k] for a quarter of the heads
        H = attn.num_attention_heads
        v = attn.qkv_proj(x).view(x.shape[0], 4, 3, -1)[:, :, 1]            # (T, 4, C / 4)
        v = _heads(v.reshape(x.shape[0], -1), H)                            # (H, T, hd)
    else:
        v = _heads(attn.v_proj(x), getattr(attn, "num_heads", None) or attn.num_attention_heads)  # (H, T, hd)
    if kind == "gpt_neo":
        mlp = lambda mid: block.mlp(block.ln_2(mid))  # noqa: E731
    else:                  # GPT-J, CodeGen: the MLP reads what the attention read
        mlp = lambda mid: block.mlp(x[-1])  # noqa: E731
    return Layer(attn, v, attn.out_proj.weight, attn.out_proj.bias, mlp)


def final_norm(lm: torch.nn.Module) -> torch.nn.Module:
    """The norm before the unembedding (MPT's norm_f, XGLM's layer_norm, GPT-NeoX-Japanese's final_layer_norm, the
    others' ln_f)."""
    return getattr(lm.base_model, _FINAL.get(lm.config.model_type, "ln_f"))
