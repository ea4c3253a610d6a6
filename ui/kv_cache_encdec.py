"""The KV cache view's section on an encoder-decoder (T5, BART, Marian, bert2bert): its decoder's two caches.

The encoder reads the prompt once; the decoder then writes greedily through transformers' EncoderDecoderCache
(models.hf.encdec.EncoderDecoder.cache_steps): its self-attention cache gains one position a step, its cross-attention
cache holds the encoder's keys and values, made at the first step and never grown. Both are measured from their
tensors after every step and set against the formula with the decoder's own sizes (experiments.kv_cache). It draws
nothing of its own (viz.kv_cache draws) and holds no model.
"""
from __future__ import annotations

from itertools import groupby

import streamlit as st

import limits
from analysis.kv import human_bytes, kv_bytes_per_token
from experiments import kv_cache as E
from limits.errors import UserError
from ui import show
from ui.family import BIND
from ui.runtime import cache
from viz import kv_cache as V


@cache.memo("results", spinner="Writing with the decoder…")
def _write(name: str, device: str, dtype: str, text: str, n: int):  # -> experiments.kv_cache.WrittenEncDec
    """Greedy writing of up to n tokens after reading `text`, kept per input."""
    return E.write_encdec(cache.model(name, device, dtype), text, n)


def section(m, sel) -> None:
    """The encoder-decoder `m` (the sidebar's `sel.model`) writing, and its two caches after every step."""
    st.header("An encoder-decoder's caches (transformers' EncoderDecoderCache)")
    st.caption(m.label)
    c = st.columns([3, 1])
    text = c[0].text_input("Text the encoder reads", "The house is wonderful.", key="kv_ed_prompt", max_chars=2000,
                           **BIND)
    n = int(c[1].number_input("Tokens to write", 1, min(64, limits.current().new_tokens), 16, key="kv_ed_tokens",
                              **BIND))
    try:
        run = _write(sel.model, sel.device, sel.dtype, text, n)
    except UserError as err:
        st.error(str(err))
        return
    for note in run.notes:
        st.warning(note)
    layers, kv, hd = m.decoder_shape()
    positions, measured, size = run.positions, run.measured, run.element_size
    wrote = m.tokenizer.decode(run.written, skip_special_tokens=True)
    if not wrote.strip():  # random or untrained weights often write only special tokens, which decoding hides
        runs = [(t, len(list(g))) for t, g in groupby(m.tokenizer.convert_ids_to_tokens(run.written))]  # repeats
        wrote = "[special tokens only: " + " ".join(t if k == 1 else f"{t} ×{k}" for t, k in runs) + "]"  # counted
    st.text(f"{text[:200]} → {wrote[:500]}")  # plain text: what a model writes is never markdown
    st.caption(f"The text, then (after →) what the decoder wrote, greedily, {len(run.written)} token"
               f"{'s' * (len(run.written) != 1)}: each step feeds the decoder one token, whose key and value join its "
               "self-attention cache; its cross-attention reads the encoder's keys and values from the other cache.")
    st.success(f"Self-attention cache after {positions[-1]} positions: {human_bytes(measured[-1])} measured from its "
               f"tensors; cross-attention cache: {human_bytes(run.cross[-1])} measured; "
               + E.formula_encdec(m, size, positions[-1], len(run.source)) + ".")
    st.caption(f"The cross-attention cache held {human_bytes(run.cross[0])} after the first step and "
               f"{human_bytes(run.cross[-1])} after the last: its size is set by the text the encoder read, not by "
               "what the decoder writes. The chart shows the self-attention cache; the grid its vectors, one column "
               "per token fed to the decoder (its start token, then each written token but the last, never fed back).")
    left, right = st.columns(2)
    with left:
        show.plot(show.figure(V.memory, positions, measured, kv_bytes_per_token(layers, kv, hd, size)),
                  "kv_ed_memory", key="kv_ed_mem")
    with right:
        tokens = m.tokenizer.convert_ids_to_tokens([m.start, *run.written])
        show.plot(show.figure(V.cache_grid, run.norms, tokens, len(tokens)), "kv_ed_cache", key="kv_ed_grid")
