"""Q, K and V of one head of a transformers decoder, computed functionally from the model's own layers.

The input of layer l is hidden_states[l] (output_hidden_states=True); each family normalises it and
projects it with its own modules, so applying them here gives the numbers the model computed:

    Llama, Mistral, Qwen2   x = input_layernorm(h); q, k = q_proj(x), k_proj(x); RoPE rotates both
                            (the model's own rotary_emb and apply_rotary_pos_emb); query head h reads
                            key/value head h // (heads / kv_heads)
    GPT-2                   x = ln_1(h); q, k, v = c_attn(x).split(d_model); learned positions are in h

No hooks and no state on the model, so a shared cached model can be asked concurrently. The model's
own attention for the head comes back beside them, so a caller can check softmax(QKᵀ/√d + mask)
against it. Other decoders (GPT-NeoX rotates only part of each head and interleaves Q, K, V per head)
get one sentence saying why not. It does not load models (models.hf.decoders does).
"""
from __future__ import annotations

import torch

from analysis.trace import HeadQKV

LLAMA_STYLE = ("llama", "mistral", "qwen2")


def _why_not(cfg, n_tokens: int) -> str | None:
    """Why this head cannot be recomputed here, or None when it can."""
    kind = cfg.model_type
    if kind not in LLAMA_STYLE + ("gpt2",):
        return (f"Inside a head recomputes Q and K for Llama-style (Llama, Mistral, Qwen2) and GPT-2 decoders; "
                f"{kind} lays its heads out differently, so pick one of those or the built-in 'gpt'.")
    if kind == "gpt2" and (cfg.scale_attn_by_inverse_layer_idx or cfg.reorder_and_upcast_attn):
        return "This GPT-2 scales its scores by the layer index as well, which this view does not redo."
    window = getattr(cfg, "sliding_window", None)
    if kind in LLAMA_STYLE and getattr(cfg, "use_sliding_window", True) and window and n_tokens > window:
        return f"This text is longer than the model's {window}-token sliding window: shorten it to see one head."
    return None


def _split(t: torch.Tensor, head_dim: int) -> torch.Tensor:
    """(B, T, n * hd) -> (B, n, T, hd)"""
    B, T, _ = t.shape
    return t.view(B, T, -1, head_dim).transpose(1, 2)


def llama_qkv(model, hidden: torch.Tensor, layer: int) -> tuple[torch.Tensor, ...]:
    """Layer `layer`'s input x (B, T, C), q (B, H, T, hd) and k, v (B, H_kv, T, hd), RoPE applied to q and k."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    base = model.base_model
    block = base.layers[layer]
    attn = block.self_attn
    x = block.input_layernorm(hidden)                                      # (B, T, C)
    q, k, v = (_split(p(x), attn.head_dim) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
    positions = torch.arange(x.shape[1], device=x.device)[None]           # (1, T)
    cos, sin = base.rotary_emb(x, positions)                               # (1, T, hd) each
    q, k = apply_rotary_pos_emb(q, k, cos, sin)                            # (B, H, T, hd), (B, H_kv, T, hd)
    return x, q, k, v


def gpt2_qkv(model, hidden: torch.Tensor, layer: int) -> tuple[torch.Tensor, ...]:
    """Layer `layer`'s input x (B, T, C) and q, k, v (B, H, T, hd)."""
    block = model.base_model.h[layer]
    attn = block.attn
    x = block.ln_1(hidden)                                                 # (B, T, C)
    q, k, v = attn.c_attn(x).split(attn.split_size, dim=2)                 # (B, T, C) each
    return (x, *(_split(t, attn.head_dim) for t in (q, k, v)))


@torch.no_grad()
def decoder_head_qkv(dec, text: str, layer: int, head: int) -> HeadQKV:
    """Tokens, the layer's normalised input X (T, C), head `head`'s q, k (RoPE applied), v (T, hd) as numpy
    arrays, the kv head it reads, and the model's own attention weights for that head (T, T)."""
    cfg = dec.config
    if not 0 <= layer < dec.n_layers or not 0 <= head < dec.n_heads:
        raise ValueError(f"L{layer} H{head} does not exist: this model has layers 0 to {dec.n_layers - 1} and "
                         f"heads 0 to {dec.n_heads - 1}.")
    ids, _ = dec.encode(text)
    why = _why_not(cfg, ids.shape[1])
    if why:
        raise ValueError(why)
    out = dec.model(input_ids=ids, output_attentions=True, output_hidden_states=True)
    qkv = llama_qkv if cfg.model_type in LLAMA_STYLE else gpt2_qkv
    x, q, k, v = qkv(dec.model, out.hidden_states[layer], layer)
    kv = dec.kv_head_of[head]
    as_np = lambda t: t.float().cpu().numpy()  # noqa: E731
    return HeadQKV(
        tokens=dec.tokenizer.convert_ids_to_tokens(ids[0].tolist()),
        x=as_np(x[0]), q=as_np(q[0, head]), k=as_np(k[0, kv]), v=as_np(v[0, kv]), scale=True, causal=True,
        kv_head=kv, model_weights=as_np(out.attentions[layer][0, head]),  # (T, T) [query_pos, key_pos]
        rope=cfg.model_type in LLAMA_STYLE,
    )

