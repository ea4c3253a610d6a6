"""The KV cache view's section on a real decoder: transformers' own cache object, filled token by token.

A Hugging Face decoder (the sidebar's, or the built-in 'gpt') writes greedily through
models.generate.stream with transformers' DynamicCache (models.hf.decoders.HFCache); the bytes are
measured from the cache's tensors after every step and set against the formula with the model's own
kv_heads, which for a grouped-query model is fewer than its query heads.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

import limits
from analysis.kv import cache_norms, cached_positions, human_bytes, kv_bytes_cached, kv_bytes_per_token
from limits.errors import UserError
from models import available
from ui import family, show
from ui.family import BIND
from ui.runtime import cache
from ui.state import selection
from viz import kv_cache as V


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


@dataclass(frozen=True)
class Written:
    """What one greedy run wrote and what its cache held after each step."""
    prompt: list[int]
    written: list[int]
    positions: list[int]  # cached positions after each step
    measured: list[int]  # bytes of the cache's tensors after each step
    element_size: int
    norms: np.ndarray  # [2 * layers, T]: analysis.kv.cache_norms of the final cache
    notes: tuple[str, ...]


@cache.memo("results", spinner="Writing with the decoder…")
def _write(name: str, device: str, dtype: str, text: str, n: int) -> Written:
    """Greedy writing of n tokens after `text`, kept per input: every visitor of the default prompt shares it."""
    dec = cache.model(name, device, dtype)
    ids, notes = dec.encode(text, room=n)
    positions, measured, written = [], [], []
    for step in dec.steps(ids, n, stop=dec.eos):
        written.append(step.token)
        positions.append(step.cache.seq_len())
        measured.append(step.cache.nbytes())
        keys, values = step.cache.keys, step.cache.values
    return Written(ids[0].tolist(), written, positions, measured, keys[0].element_size(),
                   cache_norms(keys, values, positions[-1]), tuple(notes))


def formula(dec, size: int, positions: int) -> str:
    """The formula's sentence for a cache that has seen `positions` tokens: per token and layer 2 · kv heads ·
    head_dim · bytes, times the positions each layer keeps (all, or the last W - 1 under a W-token window)."""
    per_layer = kv_bytes_per_token(1, dec.kv_heads, dec.head_dim, size)
    total = kv_bytes_cached(positions, dec.windows, dec.kv_heads, dec.head_dim, size)
    base = (f"the formula 2 · {dec.kv_heads} kv heads · {dec.head_dim} · {size} bytes = {per_layer:,} per layer and "
            "position")
    windowed = sorted({w for w in dec.windows if w is not None})
    if not windowed:
        return f"{base}, × {dec.n_layers} layers × {positions} positions gives {human_bytes(total)}."
    kept = {w: cached_positions(positions, w) for w in windowed}
    full = sum(w is None for w in dec.windows)
    parts = ([f"{full} full-attention layer{'s' * (full != 1)} × {positions}"] if full else []) + [
        f"{sum(x == w for x in dec.windows)} layer{'s' * (sum(x == w for x in dec.windows) != 1)} with a {w}-token "
        f"sliding window × {kept[w]} (its last {w} − 1 positions: the next token's own key makes {w})"
        for w in windowed]
    return f"{base}, × ({' + '.join(parts)}) gives {human_bytes(total)}."


@st.fragment
def section() -> None:
    st.header("A Hugging Face decoder's own cache (transformers' DynamicCache)")
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
        run = _write(name, sel.device, sel.dtype, text, n)
    except UserError as err:
        st.error(str(err))
        return
    for note in run.notes:
        st.warning(note)
    positions, measured, written, size = run.positions, run.measured, run.written, run.element_size
    per_token = kv_bytes_per_token(dec.n_layers, dec.kv_heads, dec.head_dim, size)
    tokens = dec.tokenizer.convert_ids_to_tokens(run.prompt + written)
    st.text(f"{text[:200]}▌{dec.tokenizer.decode(written)[:500]}")  # plain text: what a model writes is never markdown
    st.caption(f"The prompt, then (after ▌) the {len(written)} tokens the model wrote, greedily: a small model "
               "continues code and prose plausibly but often meaninglessly; what matters here is its cache below, "
               "one key and value per written token.")
    st.success(f"Cache after {positions[-1]} positions: {human_bytes(measured[-1])} measured from its tensors; "
               + formula(dec, size, positions[-1]))
    if dec.kv_heads < dec.n_heads:
        st.caption(f"{family.sharing(dec)} With one key/value head per query head the cache would be "
                   f"{dec.n_heads // dec.kv_heads}× larger: {human_bytes(per_token * dec.n_heads // dec.kv_heads)} "
                   "per token.")
    left, right = st.columns(2)
    with left:
        windowed = [kv_bytes_cached(t, dec.windows, dec.kv_heads, dec.head_dim, size) for t in positions]
        show.plot(show.figure(V.memory, positions, measured, per_token,
                              windowed if any(dec.windows) else None), "kv_hf_memory", key="kv_hf_mem")
    with right:
        show.plot(show.figure(V.cache_grid, run.norms, tokens, len(tokens)), "kv_hf_cache", key="kv_hf_grid")
