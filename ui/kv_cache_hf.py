"""The KV cache view's section on a real decoder: transformers' own cache object, filled token by token.

A Hugging Face decoder (the sidebar's, or the built-in 'gpt') writes greedily through
models.generate.stream with transformers' DynamicCache (models.hf.writing.HFCache); the bytes are
measured from the cache's tensors after every step and set against the formula with the model's own
kv_heads, which for a grouped-query model is fewer than its query heads (multi-head latent attention: one latent and
one rotary key per layer and position). The run and the formula's sentence are
experiments.kv_cache's (write, formula); this section's widgets stay apart from views/kv_cache.py, which is at ~150
lines. An encoder-decoder in the sidebar gets its decoder's two caches instead (ui.kv_cache_encdec).
"""
from __future__ import annotations

import streamlit as st

import limits
from analysis.kv import human_bytes
from experiments import kv_cache as E
from limits.errors import UserError
from models import available, layout
from ui import family, kv_cache_encdec, show
from ui.family import BIND
from ui.runtime import cache
from ui.state import selection
from viz import kv_cache as V


def _decoder(sel, model):
    """(registry name, model, why the sidebar's `model` (None: it did not load) is not it or None) of the decoder to
    show, or None after saying why and offering a switch."""
    if model is not None and family.family(model) == "decoder" and model.lm:
        return sel.model, model, None
    if model is not None and family.family(model) == "encoder" and model.writes:  # a BERT-style causal LM
        why = ("the sidebar's model writes with a cache too, but it is an encoder run as a causal LM, and this section "
               "reads a decoder-only model's")
    elif model is not None and family.family(model) == "decoder":
        why = "the sidebar's decoder holds no language-model head, so it writes nothing"
    else:
        why = "the sidebar's model is not a decoder"
    if "gpt" in available():
        return "gpt", cache.model("gpt", sel.device, sel.dtype), why
    st.info("This section shows a Hugging Face decoder's own cache: pick a decoder's folder (GPT-2, Llama, OPT, "
            "Gemma, Qwen, Falcon or any other saved from a *ForCausalLM model) with 'Other model' in the sidebar.")
    return None


@cache.memo("results", spinner="Writing with the decoder…")
def _write(name: str, device: str, dtype: str, text: str, n: int):  # -> experiments.kv_cache.Written
    """Greedy writing of n tokens after `text`, kept per input: every visitor of the default prompt shares it."""
    return E.write(cache.model(name, device, dtype), text, n)


@st.fragment
def section() -> None:
    sel = selection()
    model = family.loaded(sel)
    if model is not None and family.family(model) == "encoder-decoder" and model.lm:  # its decoder's two caches
        return kv_cache_encdec.section(model, sel)
    st.header("A Hugging Face decoder's own cache (transformers' DynamicCache)")
    found = _decoder(sel, model)
    if found is None:
        return
    name, dec, why = found
    st.caption(dec.label + ("" if why is None else f" · the built-in one: {why}"))
    if why is None:
        show.notices(dec)  # e.g. a model of text and images: only its language model writes here
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
    per_token = E.per_layer_position(dec, size) * dec.n_layers
    tokens = dec.tokenizer.convert_ids_to_tokens(run.prompt + written)
    st.text(f"{text[:200]}▌{dec.tokenizer.decode(written)[:500]}")  # plain text: what a model writes is never markdown
    wrote = f"{len(written)} token{'s' * (len(written) != 1)}"
    st.caption(f"The prompt, then (after ▌) the {wrote} the model wrote, greedily: a small model "
               "continues code and prose plausibly but often meaninglessly; what matters here is its cache below, "
               + ("a key and a value per key/value head" if E.latent_of(dec) is None else
                  "one latent and one rotary key") + " per written token in each layer that attends.")
    st.success(f"Cache after {positions[-1]} positions: {human_bytes(measured[-1])} measured from its tensors; "
               + E.formula(dec, size, positions[-1]) + ".")
    if run.states:  # layers that keep a state beside or instead of keys and values: the same size after every token
        attending = f"{dec.n_layers} layer{'s' * (dec.n_layers != 1)} that attend{'s' * (dec.n_layers == 1)}"
        st.caption((f"A hybrid: its cache holds keys and values for its {attending} alone (above); its other layers "
                    "keep a state of their own instead, " if layout.hybrid(dec) else
                    "Each of its layers also keeps a state of its own beside its keys and values (a state-space mixer "
                    "beside its attention), ")
                   + f"{human_bytes(run.states[-1])} measured after the last token and {human_bytes(run.states[0])} "
                   "after the first: it does not grow with the text.")
    if dec.cached_kv_heads != dec.kv_heads:
        st.caption(f"transformers' {layout.name(dec)} caches each key/value head once for every query head that reads "
                   f"it ({dec.cached_kv_heads} a layer, not {dec.kv_heads}), so its cache holds "
                   f"{dec.cached_kv_heads // dec.kv_heads}× what the formula says the model needs.")
    if dec.kv_heads < dec.n_heads:
        st.caption(f"{family.sharing(dec)} With one key/value head per query head the cache would be "
                   f"{dec.n_heads // dec.kv_heads}× larger: {human_bytes(per_token * dec.n_heads // dec.kv_heads)} "
                   "per token.")
    left, right = st.columns(2)
    with left:
        windowed = [E.formula_bytes(dec, size, t) for t in positions]
        per_token_is = "2·L·kv_heads·head_dim·bytes" if E.latent_of(dec) is None else "(latent + rotary key)·L·bytes"
        show.plot(show.figure(V.memory, positions, measured, per_token, windowed if any(dec.windows) else None,
                              per_token_is), "kv_hf_memory", key="kv_hf_mem")
    with right:
        rows = ("k", "v") if E.latent_of(dec) is None else ("latent", "rotary k")  # what each layer's two tensors are
        show.plot(show.figure(V.cache_grid, run.norms, tokens, len(tokens), rows), "kv_hf_cache", key="kv_hf_grid")
