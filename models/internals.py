"""Q, K and V of one head of a transformers encoder or decoder, computed functionally from the model's own layers.

The input of layer l is hidden_states[l] (output_hidden_states=True: the embeddings, then each layer's output).
Each layout reads it with its own modules, so applying them here gives exactly the numbers the model computed:

    BERT, RoBERTa, ELECTRA, MiniLM  x = h unchanged; q, k, v = query(x), key(x), value(x)
                            (model.encoder.layer[i].attention.self)
    Llama, Mistral, Qwen2   x = input_layernorm(h); q, k = q_proj(x), k_proj(x); RoPE rotates both
                            (the model's own rotary_emb and apply_rotary_pos_emb); query head h reads
                            key/value head h // (heads / kv_heads)
    GPT-2                   x = ln_1(h); q, k, v = c_attn(x).split(d_model); learned positions are in h

No hooks and no state on the model, so a shared cached model can be asked concurrently. The model's own
attention for the head comes back beside them (HeadQKV.model_weights), so a caller can check
softmax(QKᵀ/√d + mask) against it. Any other decoder whose attention goes through models.capture is read from
the capture's record instead (q and k as the model used them); one that bypasses it (Falcon, GPT-J, BLOOM) gets one
sentence saying why not. It does not load models (models.hf does). inside_head_refusal(model) says, without a
forward pass, what Inside a head refuses for a loaded model, so that views offer its buttons only where it opens.

    d = head_qkv(model, tokenizer, "The river bank was dirty", layer=0, head=3)     # an encoder
    d.q.shape  # (T, head_dim)
    d = decoder_head_qkv(gpt, "def f(x):", layer=1, head=2)                         # a models.hf Decoder
    q, k, v = qkv(model, hidden_states[2], layer=2)   # q (B, H, T, hd), k and v (B, H_kv, T, hd)
"""
from __future__ import annotations

import torch

from analysis import masks
from analysis.trace import HeadQKV
from limits.errors import UserError
from models import capture
from models.layout import BERT, LLAMA


def _kind(cfg) -> str:
    """The layout family of a config: 'llama' for 'llama' and for its pruned export 'pruned-llama'."""
    return (getattr(cfg, "model_type", None) or "").removeprefix("pruned-")


def self_attention(model, layer: int) -> torch.nn.Module:
    try:
        return model.encoder.layer[layer].attention.self
    except (AttributeError, IndexError) as err:
        raise UserError(
            f"Cannot find layer {layer}'s self-attention at model.encoder.layer[{layer}].attention.self; "
            "this view needs a BERT-like encoder."
        ) from err


def why_not(cfg, n_tokens: int) -> str | None:
    """Why this decoder head cannot be recomputed here, or None when it can."""
    kind = _kind(cfg)
    if kind not in LLAMA + ("gpt2",):
        return ("Inside a head opens Llama-style and GPT-2 decoders and any decoder whose attention goes through "
                "transformers' attention registry (Mistral, Qwen3, Gemma 3, OPT, GPT-NeoX and most others); "
                f"{kind} lays its heads out differently and computes its attention itself, so pick one of those or "
                "the built-in 'gpt'.")
    if kind == "gpt2" and (cfg.scale_attn_by_inverse_layer_idx or cfg.reorder_and_upcast_attn):
        return "This GPT-2 scales its scores by the layer index as well, which this view does not redo."
    return None


def _scale(scaling: float, d: int) -> bool | float:
    """HeadQKV.scale for scores multiplied by `scaling`: True where it is 1/√d, False where it is 1 (OPT, whose q is
    scaled in its projection), else the factor itself (Gemma's 1/√query_pre_attn_scalar, YaRN's attention factor)."""
    if abs(scaling * d ** 0.5 - 1.0) <= 1e-6:
        return True
    return False if abs(scaling - 1.0) <= 1e-9 else float(scaling)


def _config_refusal(cfg) -> str | None:
    """What a captured head's config says it does beyond softmax(scale · QKᵀ + mask): a cap on the scores
    (attn_logit_softcapping, Gemma 2); None otherwise (a scale of its own is a step the view shows)."""
    kind = _kind(cfg)
    cap = getattr(cfg, "attn_logit_softcapping", None)
    if cap:
        return (f"{kind} caps its attention scores ({cap:g} · tanh(score / {cap:g})), which this view's steps do not "
                "show yet.")
    return None


def inside_head_says(cfg, family: str | None, captured: bool, pruned: bool = False) -> str | None:
    """The one rule of Inside a head: the sentence it says for a model of this config, or None where it opens its
    heads. `family` as models.hf names it ("encoder", "decoder", ...), `captured`: its attention goes through
    models.capture, `pruned`: an encoder with pruned heads. inside_head_refusal asks it for a loaded model and
    models.supported() for an architecture's default config, so the two cannot disagree on the same config (a
    checkpoint whose config differs from the default, a Gemma 3 with another query_pre_attn_scalar, can)."""
    kind = _kind(cfg)
    if family == "encoder":
        if kind in BERT and not pruned:
            return None
        if pruned or not captured:
            why = "pruned heads" if pruned else f"the {kind} layout"
            return (f"Inside a head recomputes Q, K and V for BERT, RoBERTa and ELECTRA layouts and reads any other "
                    f"encoder's from the capture, not for {why}: pick the built-in 'bert' or one of those.")
        return _config_refusal(cfg)
    if family != "decoder":
        return "Inside a head recomputes one head of a text encoder or decoder."
    why = why_not(cfg, 1)
    if why is None:
        return None
    return _config_refusal(cfg) if captured else why


def inside_head_refusal(model) -> str | None:
    """The sentence Inside a head says for a loaded model (a models.hf Encoder or Decoder), or None where it opens its
    heads: inside_head_says on its config, whether its attention goes through models.capture and its pruned heads,
    with no forward pass. Built-ins (no config) open: None. Not decided here: a head out of range or pruned, and a
    captured head whose weights turn out not to be softmax(QKᵀ/√d_k + mask) though its config does not say so
    (captured_head finds that on the forward pass)."""
    cfg = getattr(model, "config", None)
    if cfg is None:
        return None
    return inside_head_says(cfg, getattr(model, "family", None), capture.installed(model.model),
                            bool(getattr(model, "pruned_heads", None)))


def _split(t: torch.Tensor, head_dim: int) -> torch.Tensor:
    """(B, T, n * hd) -> (B, n, T, hd)"""
    B, T, _ = t.shape
    return t.view(B, T, -1, head_dim).transpose(1, 2)


def bert_qkv(model, hidden: torch.Tensor, layer: int) -> tuple[torch.Tensor, ...]:
    """Layer `layer`'s input x (B, T, C), which BERT's attention reads unchanged, and q, k, v (B, H, T, hs)."""
    sa = self_attention(model, layer)
    return (hidden, *(_split(p(hidden), sa.attention_head_size) for p in (sa.query, sa.key, sa.value)))


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


def layer_qkv(model, hidden: torch.Tensor, layer: int) -> tuple[torch.Tensor, ...]:
    """x (B, T, C) as the layer's attention reads it, and q, k, v (B, H or H_kv, T, hd), for any layout above."""
    kind = _kind(model.config)
    layout = llama_qkv if kind in LLAMA else gpt2_qkv if kind == "gpt2" else bert_qkv
    return layout(model, hidden, layer)


def qkv(model, hidden: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Layer `layer`'s q, k, v, each (B, H, T, hs) (k, v: H_kv heads), from hidden (B, T, C) = hidden_states[layer]
    of a forward pass with output_hidden_states=True; softmax(q kᵀ / √hs + mask) is that layer's attention."""
    return layer_qkv(model, hidden, layer)[1:]


def _head(model, inputs: dict, tokens: list[str], layer: int, head: int, kv_head: int, causal: bool,
          rows: tuple[int, int] | None = None, window: int | None = None) -> HeadQKV:
    """The one recompute: a forward pass for hidden states and attentions, then head `head`'s numbers (`rows`: the
    query and k/v positions that hold them in a pruned layer, else head and kv_head)."""
    q_at, kv_at = rows or (head, kv_head)
    out = model(**inputs, output_attentions=True, output_hidden_states=True)
    if out.attentions is None or out.attentions[layer] is None:
        raise UserError("This model computes its attention without returning its weights, so this head cannot be "
                        "shown: pick another model.")
    x, q, k, v = layer_qkv(model, out.hidden_states[layer], layer)        # (B, T, C), (B, H or H_kv, T, hd)
    as_np = lambda t: t.float().cpu().numpy()  # noqa: E731
    return HeadQKV(
        tokens=tokens, x=as_np(x[0]), q=as_np(q[0, q_at]), k=as_np(k[0, kv_at]), v=as_np(v[0, kv_at]),
        scale=True, causal=causal, model_weights=as_np(out.attentions[layer][0, q_at]),  # (T, T) [query, key]
        kv_head=kv_head if causal else None, rope=_kind(model.config) in LLAMA, window=window,
    )


@torch.no_grad()
def head_qkv(model, tokenizer, text: str, layer: int, head: int, text_b: str | None = None) -> HeadQKV:
    """An encoder's tokens, the layer's input X (T, hidden), head `head`'s q, k, v (T, hs) as numpy arrays, and
    the model's own attention weights for that head (T, T) from output_attentions=True; causal where the config says
    the encoder runs as a decoder (is_decoder: a BERT-style causal LM)."""
    n_heads = self_attention(model, layer).num_attention_heads
    if not 0 <= head < n_heads:
        raise UserError(f"Head {head} does not exist: this model has heads 0 to {n_heads - 1}.")
    enc = tokenizer(text, text_b, return_tensors="pt", truncation=True)
    enc = {k: v.to(model.device) for k, v in enc.items()}
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    return _head(model, enc, tokens, layer, head, head, causal=bool(getattr(model.config, "is_decoder", False)))


@torch.no_grad()
def decoder_head_qkv(dec, text: str, layer: int, head: int) -> HeadQKV:
    """A models.hf Decoder's tokens, the layer's normalised input X (T, C), head `head`'s q, k (RoPE applied),
    v (T, hd) as numpy arrays, the kv head it reads, and the model's own attention weights for that head (T, T)."""
    if not 0 <= layer < dec.n_layers or not 0 <= head < dec.n_heads:
        raise UserError(f"L{layer} H{head} does not exist: this model has layers 0 to {dec.n_layers - 1} and "
                        f"heads 0 to {dec.n_heads - 1}.")
    ids, _ = dec.encode(text)
    tokens = dec.tokenizer.convert_ids_to_tokens(ids[0].tolist())
    why = inside_head_refusal(dec)
    if why:
        raise UserError(why)
    if why_not(dec.config, ids.shape[1]):  # through the capture (inside_head_refusal would have said otherwise)
        return captured_head(dec.model, {"input_ids": ids}, tokens, layer, head, causal=True, window=dec.windows[layer],
                             own=dec.attending[layer])
    return _head(dec.model, {"input_ids": ids}, tokens, layer, head, dec.kv_head_of[head], causal=True,
                 rows=_pruned_rows(dec.model, layer, head), window=dec.windows[layer])


PRE_NORMS = ("input_layernorm", "self_attn_layer_norm", "ln_1", "attention_norm", "ln_attn", "norm_1", "attn_norm",
             "layernorm1", "operator_norm")  # operator_norm: LFM2's, before its attention or convolution


def _layer_input(lm, call, hidden: torch.Tensor) -> torch.Tensor:
    """What the layer's attention reads (1, T, C): its input `hidden` through its norm before attention (PRE_NORMS: the
    names transformers gives it), or `hidden` itself where it has none or norms after attention (a post-norm OPT).
    Where the attention has a value projection of its own, the one whose values are the recorded ones is taken."""
    block, attn = lm.get_submodule(call.module.rsplit(".", 1)[0]), lm.get_submodule(call.module)
    norm = next((getattr(block, n) for n in PRE_NORMS if isinstance(getattr(block, n, None), torch.nn.Module)), None)
    candidates = [hidden] if norm is None else [norm(hidden), hidden]
    v_proj = getattr(attn, "v_proj", None)
    if not isinstance(v_proj, torch.nn.Linear):
        return candidates[0] if getattr(lm.config, "do_layer_norm_before", True) else hidden
    for x in candidates:
        v = v_proj(x).view(*x.shape[:2], call.value.shape[1], -1).transpose(1, 2)  # (1, H_kv, T, d_v)
        if v.shape == call.value.shape and torch.allclose(v, call.value, atol=1e-4, rtol=1e-3):
            return x
    return candidates[0]


QK_NORMS = ("q_norm", "k_norm", "q_layernorm", "k_layernorm")  # an attention module's norms of its queries and keys


@torch.no_grad()
def captured_head(lm, inputs: dict, tokens: list[str], layer: int, head: int, causal: bool,
                  window: int | None = None, own: int | None = None) -> HeadQKV:
    """A head of any model whose attention goes through models.capture: q and k as the model used them (after RoPE
    and q/k norms; OPT's q already scaled, so its scores are not divided again), v and the weights, all from the
    record of one forward pass of `inputs`; x is what the attention reads (_layer_input), at the model's own layer
    `own` where it differs from `layer` (a hybrid's L0 may be its layer 4), and its scale (1/√d, none, or its own
    factor: _scale). UserError when the head's weights are not softmax(scale · q kᵀ + mask), the steps this view shows
    (a score cap, attention sinks)."""
    kind = lm.config.model_type
    with capture.recording(lm) as calls:
        out = lm(**inputs, output_hidden_states=True)
    call = [c for c in calls if not c.cross][layer]
    kv = head // (call.query.shape[1] // call.key.shape[1])              # the key/value head this query head reads
    q, k, v, w = call.query[0, head], call.key[0, kv], call.value[0, kv], call.weights[0, head]  # (T, d) ..., (T, T)
    T, d = q.shape
    scaling = d ** -0.5 if call.scaling is None else float(call.scaling)
    allowed = masks.causal(T, device=q.device, window=window or None) if causal else torch.ones(T, T, dtype=torch.bool,
                                                                                           device=q.device)
    redo = (q.float() @ k.float().T * scaling).masked_fill(~allowed, float("-inf")).softmax(-1)  # (T, T)
    if not torch.allclose(redo, w.float(), atol=1e-4 if w.dtype == torch.float32 else 2e-2):  # half types: ~1e-2
        raise UserError(f"{kind}'s heads do more than softmax(scale · QKᵀ + mask) (a cap on the scores, attention "
                        "sinks or local windows), which this view's steps do not show yet.")
    x = _layer_input(lm, call, out.hidden_states[layer if own is None else own])  # (1, T, C) own: a hybrid's number
    as_np = lambda t: t.float().cpu().numpy()  # noqa: E731
    return HeadQKV(tokens=tokens, x=as_np(x[0]), q=as_np(q), k=as_np(k), v=as_np(v), scale=_scale(scaling, d),
                   causal=causal, model_weights=as_np(w), kv_head=kv if causal else None,
                   window=window if causal else None, rope=getattr(lm.config, "rope_parameters", None) is not None,
                   qk_norm=any(getattr(lm.get_submodule(call.module), n, None) is not None for n in QK_NORMS))


def _pruned_rows(model, layer: int, head: int) -> tuple[int, int] | None:
    """(query position, k/v row) of original head `head` in a layer of a pruned decoder export (Llama-style:
    models.pruned_modeling.head_positions; GPT-2: the kept heads in order), None when the model is not one;
    ValueError when that head was pruned."""
    from models.pruned_modeling import head_positions, heads_at

    plan = getattr(model.config, "pruned_heads", None)
    if not plan:
        return None
    positions = head_positions(model)
    at = heads_at(plan, layer, model.config.num_attention_heads, positions)
    if head not in at:
        raise UserError(f"L{layer} H{head} was pruned from this model: pick one of its kept heads.")
    p = at.index(head)
    return p, p if positions is None else p // model.base_model.layers[layer].self_attn.num_key_value_groups
