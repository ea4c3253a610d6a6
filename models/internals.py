"""Q, K, V of a real BERT-like encoder's heads, computed functionally from the model's own hidden states.

The input of layer l is hidden_states[l] (output_hidden_states=True: the embeddings, then each layer's
output), and BERT's attention reads it unchanged, so applying that layer's own query/key/value Linear
modules to it gives exactly the numbers the model computed. No hooks, no state on the model: a model
shared by many sessions can be asked concurrently. Works with BERT, RoBERTa, ELECTRA and MiniLM layouts
(model.encoder.layer[i].attention.self); it does not load models.

    d = head_qkv(model, tokenizer, "The river bank was dirty", layer=0, head=3)
    d.q.shape  # (T, head_dim)
    q, k, v = qkv(model, hidden_states[2], layer=2)   # each (B, H, T, head_dim)
"""
from __future__ import annotations

import torch

from analysis.trace import HeadQKV


def self_attention(model, layer: int) -> torch.nn.Module:
    try:
        return model.encoder.layer[layer].attention.self
    except (AttributeError, IndexError) as err:
        raise ValueError(
            f"Cannot find layer {layer}'s self-attention at model.encoder.layer[{layer}].attention.self; "
            "this view needs a BERT-like encoder."
        ) from err


def qkv(model, x: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Layer `layer`'s q, k, v, each (B, H, T, hs), from its input x (B, T, hidden) = hidden_states[layer]
    of a forward pass with output_hidden_states=True; softmax(q kᵀ / √hs + mask) is that layer's attention."""
    sa = self_attention(model, layer)
    B, T, _ = x.shape
    split = lambda t: t.view(B, T, sa.num_attention_heads, sa.attention_head_size).transpose(1, 2)  # noqa: E731
    return split(sa.query(x)), split(sa.key(x)), split(sa.value(x))  # (B, H, T, hs) each


@torch.no_grad()
def head_qkv(model, tokenizer, text: str, layer: int, head: int, text_b: str | None = None) -> HeadQKV:
    """Tokens, the layer's input X (T, hidden), head `head`'s q, k, v (T, hs) as numpy arrays, and
    the model's own attention weights for that head (T, T) from output_attentions=True."""
    sa = self_attention(model, layer)
    n_heads = sa.num_attention_heads
    if not 0 <= head < n_heads:
        raise ValueError(f"Head {head} does not exist: this model has heads 0 to {n_heads - 1}.")
    enc = tokenizer(text, text_b, return_tensors="pt", truncation=True)
    enc = {k: v.to(model.device) for k, v in enc.items()}
    out = model(**enc, output_attentions=True, output_hidden_states=True)
    if out.attentions is None or out.attentions[layer] is None:
        raise ValueError("The model returned no attention weights: load it with attn_implementation='eager'.")
    q, k, v = (t[0, head] for t in qkv(model, out.hidden_states[layer], layer))  # (T, hs) each
    as_np = lambda t: t.float().cpu().numpy()  # noqa: E731
    return HeadQKV(
        tokens=tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist()),
        x=as_np(out.hidden_states[layer][0]), q=as_np(q), k=as_np(k), v=as_np(v), scale=True, causal=False,
        model_weights=as_np(out.attentions[layer][0, head]),  # (T, T) [query_pos, key_pos]
    )

