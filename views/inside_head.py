"""Inside one head: X, Q, K, V, QKᵀ, ÷√d_k, mask, softmax, A·V for the toy, the tiny decoder, a BERT-like
encoder or a Llama-style / GPT-2 decoder (Q and K with RoPE applied), checked against the model's weights."""
from __future__ import annotations

import streamlit as st

from analysis import inside_head as A
from analysis.tokens import readable
from limits.errors import UserError
from models.toy import build
from ui import family, show, state
from ui.runtime import cache
from viz.inside_head import entropy_figure, mask_effect, neuron_figure, step_row

D_MODELS = (4, 8, 16, 32, 64, 384)
WINDOW = 32  # tokens drawn at once: every label stays readable and each panel stays small
Q = dict(bind="query-params")
entropy_curves = cache.memo("results")(A.entropy_vs_dk)
toy = cache.memo("models")(build)  # one toy per settings and device

@cache.memo("results")
def one_head(name: str | tuple, device: str, dtype: str, text: str, layer: int, head: int, text_b: str | None = None):
    """A head as HeadQKV: of the toy built with the settings `name` holds (a tuple), else of a built-in or a folder
    (a registry key); text_b (an encoder's second text) only where one is given."""
    model = toy(*name, device, dtype) if isinstance(name, tuple) else cache.model(name, device, dtype)
    return model.head_qkv(text, layer, head, text_b) if text_b else model.head_qkv(text, layer, head)

def pick(n_layers: int, n_heads: int, tag: str, cols) -> tuple[int, int]:
    """Layer and head boxes in two columns, keys ih_<tag>_layer and ih_<tag>_head; a value out of range is dropped."""
    state.clamp(f"ih_{tag}_layer", 0, n_layers - 1)
    state.clamp(f"ih_{tag}_head", 0, n_heads - 1)
    return (cols[0].selectbox("layer", range(n_layers), key=f"ih_{tag}_layer", format_func=lambda i: f"L{i}", **Q),
            cols[1].selectbox("head", range(n_heads), key=f"ih_{tag}_head", format_func=lambda i: f"H{i}", **Q))

st.title("Inside one head")
sel = state.selection()
choices = family.head_sources(sel)
first = sel.model if sel.model in choices else choices[0]
if st.session_state.get("ih_model", first) not in choices:  # the sidebar's model changed under it
    if first == choices[0]:  # set, so that the page, which still holds the old choice, is told the new one
        st.session_state["ih_model"] = first
    else:  # dropped: the radio opens on the sidebar's model, and a link keeps no parameter for it
        st.session_state.pop("ih_model")
names = {"toy": "Toy layer", "tiny": "Tiny decoder", "bert": "BERT (MiniLM)", "gpt": "GPT (Llama-style)",
         "induction": "Induction (attention-only)"}
source = st.radio("Model", choices, index=choices.index(first),  # a choice equal to it keeps no link parameter
                  horizontal=True, key="ih_model", **Q, format_func=lambda k: names.get(k, k),
                  help="This choice wins over the sidebar's Model on this view: the sidebar's model only picks which "
                       "of these opens first, and BERT and GPT read the sidebar's text.")
if source != sel.model:  # picked here, or the sidebar's model is none this view opens (a folder that failed)
    how = (", picked here;", "rules the other views") if sel.model in choices else (":", "is not one this view opens")
    st.caption(f"Showing {names.get(source, source)}{how[0]} the sidebar's Model ({sel.model}) {how[1]}.")

try:
    if source == "toy":
        c = st.columns(4)
        d_model = c[0].selectbox("d_model", D_MODELS, index=1, key="ih_d_model", **Q)
        divisors = [h for h in (1, 2, 4, 8, 12) if d_model % h == 0]  # every head gets d_model / heads dimensions
        heads = c[1].selectbox("heads", divisors, index=1, key="ih_heads", **Q)
        seed = c[2].number_input("seed", 0, 10_000, 0, key="ih_seed", **Q)
        head = c[3].selectbox("head", range(heads), key="ih_toy_head", format_func=lambda i: f"H{i}", **Q)
        t = st.columns(4)
        flags = [t[0].toggle("projections W_Q, W_K, W_V", True, key="ih_proj", **Q),
                 t[1].toggle("scale by √d_k", True, key="ih_scale", **Q),
                 t[2].toggle("causal mask", False, key="ih_causal", **Q),
                 t[3].toggle("positional encoding", True, key="ih_pos", **Q)]
        if not sel.text.strip():
            st.info("Type a sentence in the sidebar to see the toy attend over it.")
            st.stop()
        settings = (d_model, heads, int(seed), *flags)
        data = one_head(settings, sel.device, sel.dtype, sel.text, 0, head)
        st.caption(toy(*settings, sel.device, sel.dtype).label)
    elif source == "tiny":
        model = cache.model("tiny", sel.device, sel.dtype)
        c = st.columns(3)
        digits = c[0].text_input("Digits to sort", "31415", key="ih_digits", max_chars=20, **Q)
        layer, head = pick(model.net.cfg.n_layer, model.net.cfg.n_head, "tiny", c[1:])
        data = one_head("tiny", sel.device, sel.dtype, digits, layer, head)
        st.caption(f"{model.label}. It answered **{cache.trace('tiny', sel.device, sel.dtype, digits, None).output}**.")
    elif source == "induction":
        cfg = cache.model("induction", sel.device, sel.dtype).net.cfg
        layer, head = pick(cfg.n_layer, cfg.n_head, "ind", st.columns(2))
        data = one_head(sel.model if sel.model.startswith("induction@") else "induction", sel.device, sel.dtype,
                        sel.text, layer, head)  # the checkpoint the sidebar names ('induction@1100'), else the last
        st.caption("The induction model's last checkpoint, on the sidebar's syllables (the Induction heads view "
                   "shows its training).")
    else:
        shown = cache.model(source, sel.device, sel.dtype)  # a hybrid's layers that attend alone (its L0, L1, ...)
        layer, head = pick(shown.n_layers, shown.n_heads, "bert", st.columns(2))
        show.notices(shown)
        if not sel.text.strip():
            st.info("Type a sentence in the sidebar to look inside a head.")
            st.stop()
        data = one_head(source, sel.device, sel.dtype, sel.text, layer, head, sel.text_b)
        st.caption(A.source_note(data))
except UserError as err:
    if source not in names:  # a folder's model this view cannot open: the built-ins instead
        family.switch(str(err), ["bert", "gpt"], "ih")
    else:
        st.error(str(err))
    st.stop()

tokens = data.tokens
result = A.steps(data.x, data.q, data.k, data.v, data.scale, data.causal, data.window)
gaps = A.checks(data, result)  # on every token, before any window
start = 0
if len(tokens) > WINDOW:  # a long text: draw a window of tokens, readable and quick to send
    state.clamp("ih_focus", 0, len(tokens) - WINDOW)
    start = st.slider(f"Tokens shown ({WINDOW} at a time)", 0, len(tokens) - WINDOW, 0, key="ih_focus",
                      **state.BIND, help="Moves the window; the head still attends over the whole text.")
    st.info(A.window_note(tokens, start, WINDOW))
    result = A.window(result, start, WINDOW)
    tokens = tokens[start:start + WINDOW]
show.explain(A.IDEA, *A.explain_steps(data))
for note in A.check_notes(gaps):
    st.success(note)

steps_tab, scale_tab, mask_tab, neuron_tab = st.tabs(
    ["Step by step", "Why divide by √d_k", "What the causal mask does", "One query · one key"],
    key="ih_tab", **Q)  # only the open tab runs and draws
if steps_tab.open:
    with steps_tab:
        st.caption("One panel per line of the head's arithmetic, in order; “How it works” above has each "
                   "line's formula and torch code.")
        for row in (("X",), ("Q", "K", "V"), ("QKᵀ", "÷√d_k", "mask"), ("softmax", "A·V")):
            show.plot(step_row(row, result, tokens), f"inside_head_{'_'.join(row)}", key=f"ih_fig_{row[0]}")
        for note in A.step_notes(data):
            st.caption(note)
if scale_tab.open:
    with scale_tab:  # variance of q·k and softmax entropy against d_k, with and without the scale, on random q, k
        show.plot(entropy_figure(curves := entropy_curves()), "inside_head_scale")
        st.markdown(A.scale_note(curves))
if mask_tab.open:
    with mask_tab:  # the head's softmax without and with the causal mask, on the tokens shown
        bidir, causal, note = A.with_and_without_mask(data, start, WINDOW)
        show.plot(mask_effect(bidir, causal, tokens), "inside_head_mask")
        st.caption(note)
if neuron_tab.open:
    with neuron_tab:  # one query and one key: q·k as its per-dimension products, summing to the score
        label = lambda i: f"{i}: {readable(data.tokens[i])}"  # noqa: E731
        for key in ("ih_nq", "ih_nk"):
            state.clamp(key, 0, len(data.tokens) - 1)
        c = st.columns(2)
        i = c[0].selectbox("query token", range(len(data.tokens)), len(data.tokens) - 1, key="ih_nq", format_func=label)
        j = c[1].selectbox("key token", range(len(data.tokens)), 0, key="ih_nk", format_func=label)
        q, k, score, note = A.one_score(data, i, j)
        show.plot(neuron_figure(q, k, data.tokens[i], data.tokens[j], score, A.scale_label(data.scale, len(q))),
                  "inside_head_neuron", key="ih_neuron_fig")
        st.caption(note)
