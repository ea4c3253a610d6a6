"""The KV cache view's section on a real decoder: transformers' own cache object, filled token by token.

A Hugging Face decoder (the sidebar's, or the built-in 'gpt') writes greedily through
models.generate.stream with transformers' DynamicCache (models.hf.decoders.HFCache); the bytes are
measured from the cache's tensors after every step and set against the formula with the model's own
kv_heads, which for a grouped-query model is fewer than its query heads.
"""
from __future__ import annotations

import streamlit as st

import limits
from analysis.kv import cache_norms, human_bytes, kv_bytes_per_token
from models import available
from ui import cache, family, show
from ui.family import BIND
from ui.state import selection
from viz import kv as V


def _decoder(sel):
    """(registry name, model) of the decoder to show, or None after saying why and offering a switch."""
    model = family.loaded(sel)
    if model is not None and family.family(model) == "decoder" and model.lm:
        return sel.model, model
    if "gpt" in available():
        return "gpt", cache.model("gpt", sel.device, sel.dtype)
    st.info("This section shows a Hugging Face decoder's own cache: pick a GPT-2, GPT-NeoX, Llama, Mistral or Qwen2 "
            "folder (saved from a *ForCausalLM model) with 'Other model' in the sidebar.")
    return None


@st.fragment
def section() -> None:
    st.subheader("A Hugging Face decoder's own cache (transformers' DynamicCache)")
    sel = selection()
    found = _decoder(sel)
    if found is None:
        return
    name, dec = found
    st.caption(dec.label + ("" if name == sel.model else " · the sidebar's model is not a decoder, so this is the "
                                                          "built-in one"))
    c = st.columns([3, 1])
    text = c[0].text_input("Prompt", "def attention(q, k, v):", key="kv_hf_prompt", max_chars=2000, **BIND)
    n = int(c[1].number_input("Tokens to write", 1, min(128, limits.current().new_tokens), 16, key="kv_hf_tokens",
                              **BIND))
    try:
        ids, notes = dec.encode(text, room=n)
    except ValueError as err:
        st.error(str(err))
        return
    for note in notes:
        st.warning(note)
    positions, measured, written = [], [], []
    for step in dec.steps(ids, n, stop=dec.eos):
        written.append(step.token)
        positions.append(step.cache.seq_len())
        measured.append(step.cache.nbytes())
        keys, values = step.cache.keys, step.cache.values
    size = keys[0].element_size()
    per_token = kv_bytes_per_token(dec.n_layers, dec.kv_heads, dec.head_dim, size)
    tokens = dec.tokenizer.convert_ids_to_tokens(ids[0].tolist() + written)
    st.text(f"It wrote: {dec.tokenizer.decode(written)[:500]}")  # plain text: what a model writes is never markdown
    st.success(f"Cache after {positions[-1]} positions: {human_bytes(measured[-1])} measured from its tensors; the "
               f"formula 2 · {dec.n_layers} layers · {dec.kv_heads} kv heads · {dec.head_dim} · {size} bytes gives "
               f"{per_token:,} × {positions[-1]} = {human_bytes(per_token * positions[-1])}.")
    if dec.kv_heads < dec.n_heads:
        st.caption(f"{family.sharing(dec)} With one key/value head per query head the cache would be "
                   f"{dec.n_heads // dec.kv_heads}× larger: {human_bytes(per_token * dec.n_heads // dec.kv_heads)} "
                   "per token.")
    left, right = st.columns(2)
    with left:
        show.plot(V.memory(positions, measured, per_token), "kv_hf_memory", key="kv_hf_mem")
    with right:
        show.plot(V.cache_grid(cache_norms(keys, values), tokens, len(tokens)), "kv_hf_cache", key="kv_hf_grid")
