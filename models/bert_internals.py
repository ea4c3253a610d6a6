"""Q, K, V of one head of a real BERT-like encoder, taken with forward hooks.

Hooks sit on layer `layer`'s self-attention query/key/value Linear modules, so the numbers are
the ones the model itself computed in this forward pass, not a re-implementation. It works with a
transformers BertModel (or any encoder whose layers live at model.encoder.layer[i].attention.self);
it does not load models, and it removes its hooks before returning. layer_qk() is the hook-free
way for many sentences at once: a layer's queries and keys from its input hidden states.

    d = head_qkv(model, tokenizer, "The river bank was dirty", layer=0, head=3)
    d["q"].shape  # (T, head_dim)
"""
from __future__ import annotations

import torch


def self_attention(model, layer: int) -> torch.nn.Module:
    try:
        return model.encoder.layer[layer].attention.self
    except (AttributeError, IndexError) as err:
        raise ValueError(
            f"Cannot find layer {layer}'s self-attention at model.encoder.layer[{layer}].attention.self; "
            "this view needs a BERT-like encoder."
        ) from err


@torch.no_grad()
def head_qkv(model, tokenizer, text: str, layer: int, head: int, text_b: str | None = None) -> dict:
    """Tokens, the layer's input X (T, hidden), head `head`'s q, k, v (T, hs) as numpy arrays, and
    the model's own attention weights for that head (T, T) from output_attentions=True."""
    sa = self_attention(model, layer)
    n_heads = sa.num_attention_heads
    if not 0 <= head < n_heads:
        raise ValueError(f"Head {head} does not exist: this model has heads 0 to {n_heads - 1}.")
    enc = tokenizer(text, text_b, return_tensors="pt", truncation=True)
    enc = {k: v.to(model.device) for k, v in enc.items()}
    seen: dict[str, torch.Tensor] = {}

    def keep(name: str):
        def hook(module, inputs, output):
            seen[name] = output  # (B, T, nh * hs)
            seen["x"] = inputs[0]  # (B, T, hidden): the same input feeds query, key and value
        return hook

    handles = [getattr(sa, name).register_forward_hook(keep(name)) for name in ("query", "key", "value")]
    try:
        out = model(**enc, output_attentions=True)
    finally:
        for h in handles:
            h.remove()
    if out.attentions is None or out.attentions[layer] is None:
        raise ValueError("The model returned no attention weights: load it with attn_implementation='eager'.")
    hs = sa.attention_head_size
    per_head = {name: seen[name][0].view(-1, n_heads, hs)[:, head] for name in ("query", "key", "value")}  # (T, hs)
    as_np = lambda t: t.float().cpu().numpy()  # noqa: E731
    return {
        "tokens": tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist()),
        "x": as_np(seen["x"][0]),
        "q": as_np(per_head["query"]), "k": as_np(per_head["key"]), "v": as_np(per_head["value"]),
        "scale": True, "causal": False,
        "model_weights": as_np(out.attentions[layer][0, head]),  # [query_pos, key_pos]
    }


def layer_qk(model, hidden: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys of every head of `layer`, computed functionally from the layer's input.

    hidden: (B, T, D), the layer's input, i.e. hidden_states[layer] of a forward pass with
    output_hidden_states=True (hidden_states[0] is the embeddings' output). The layer's own query and
    key Linear modules are applied to it, so no hook or state is left on a shared model.
    Returns q, k: (B, nh, T, hs); softmax(q kᵀ / √hs + mask) is the model's attention for that layer.
    """
    sa = self_attention(model, layer)
    b, t, _ = hidden.shape
    shape = (b, t, sa.num_attention_heads, sa.attention_head_size)
    q = sa.query(hidden).view(shape).transpose(1, 2)  # (B, nh, T, hs)
    k = sa.key(hidden).view(shape).transpose(1, 2)    # (B, nh, T, hs)
    return q, k
