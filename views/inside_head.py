"""Inside one head: X, Q, K, V, QKᵀ, ÷√d_k, mask, softmax, A·V for the toy, the tiny decoder, a BERT-like
encoder or a Llama-style / GPT-2 decoder (Q and K with RoPE applied), checked against the model's weights."""
from __future__ import annotations

import streamlit as st

from analysis.inside_head import checks, explain_steps, steps, window
from analysis.tokens import readable
from limits.errors import UserError
from ui import family, inside_head, show, state
from ui.inside_head import hf_head, induction_head, mask_section, neuron_section, scale_section, tiny_head, toy_head
from ui.runtime import cache
from viz.inside_head import step_row

D_MODELS = (4, 8, 16, 32, 64, 384)
WINDOW = 32  # tokens drawn at once: every label stays readable and each panel stays small


st.title("Inside one head")
sel = state.selection()
choices = family.head_sources(sel)
if st.session_state.get("ih_model") not in choices:  # e.g. the sidebar's model changed under it
    st.session_state.pop("ih_model", None)
names = {"toy": "Toy layer", "tiny": "Tiny decoder", "bert": "BERT (MiniLM)", "gpt": "GPT (Llama-style)",
         "induction": "Induction (attention-only)"}
source = st.radio("Model", choices, index=choices.index(sel.model) if sel.model in choices else 0,
                  horizontal=True, key="ih_model", bind="query-params", format_func=lambda k: names.get(k, k),
                  help="This choice wins over the sidebar's Model on this view: the sidebar's model only picks which "
                       "of these opens first, and BERT and GPT read the sidebar's text.")
if source != sel.model:
    st.caption(f"Showing {names.get(source, source)}, picked here; the sidebar's Model ({sel.model}) applies to the "
               "other views.")

try:
    if source == "toy":
        c = st.columns(4)
        d_model = c[0].selectbox("d_model", D_MODELS, index=1, key="ih_d_model", bind="query-params")
        # only head counts that divide d_model are offered, so every head gets d_model / heads dimensions
        heads = c[1].selectbox("heads", [h for h in (1, 2, 4, 8, 12) if d_model % h == 0], index=1, key="ih_heads",
                               bind="query-params")
        seed = c[2].number_input("seed", 0, 10_000, 0, key="ih_seed", bind="query-params")
        head = c[3].selectbox("head", range(heads), key="ih_toy_head", format_func=lambda i: f"H{i}",
                              bind="query-params")
        t = st.columns(4)
        flags = [t[0].toggle("projections W_Q, W_K, W_V", True, key="ih_proj", bind="query-params"),
                 t[1].toggle("scale by √d_k", True, key="ih_scale", bind="query-params"),
                 t[2].toggle("causal mask", False, key="ih_causal", bind="query-params"),
                 t[3].toggle("positional encoding", True, key="ih_pos", bind="query-params")]
        if not sel.text.strip():
            st.info("Type a sentence in the sidebar to see the toy attend over it.")
            st.stop()
        data, label = toy_head((d_model, heads, int(seed), *flags), sel.device, sel.dtype, sel.text, head)
        st.caption(label)
    elif source == "tiny":
        model = cache.model("tiny", sel.device, sel.dtype)
        c = st.columns(3)
        digits = c[0].text_input("Digits to sort", "31415", key="ih_digits", max_chars=20, bind="query-params")
        layer = c[1].selectbox("layer", range(model.net.cfg.n_layer), key="ih_tiny_layer",
                               format_func=lambda i: f"L{i}", bind="query-params")
        head = c[2].selectbox("head", range(model.net.cfg.n_head), key="ih_tiny_head", format_func=lambda i: f"H{i}",
                              bind="query-params")
        data = tiny_head(sel.device, sel.dtype, digits, layer, head)
        answer = cache.trace("tiny", sel.device, sel.dtype, digits, None).output
        st.caption(f"{model.label}. It answered **{answer}**.")
    elif source == "induction":
        cfg = cache.model("induction", sel.device, sel.dtype).net.cfg
        c = st.columns(2)
        layer = c[0].selectbox("layer", range(cfg.n_layer), key="ih_ind_layer", format_func=lambda i: f"L{i}",
                               bind="query-params")
        head = c[1].selectbox("head", range(cfg.n_head), key="ih_ind_head", format_func=lambda i: f"H{i}",
                              bind="query-params")
        data = induction_head(sel.device, sel.dtype, sel.text, layer, head,
                              sel.model if sel.model.startswith("induction@") else "induction")
        st.caption("The induction model's last checkpoint, on the sidebar's syllables (the Induction heads view "
                   "shows its training).")
    else:
        model = cache.model(source, sel.device, sel.dtype)
        cfg = model.model.config
        for key, n in (("ih_bert_layer", cfg.num_hidden_layers), ("ih_bert_head", cfg.num_attention_heads)):
            if st.session_state.get(key, 0) >= n:  # left from a larger model
                st.session_state.pop(key)
        c = st.columns(2)
        layer = c[0].selectbox("layer", range(cfg.num_hidden_layers), key="ih_bert_layer",
                               format_func=lambda i: f"L{i}", bind="query-params")
        head = c[1].selectbox("head", range(cfg.num_attention_heads), key="ih_bert_head",
                              format_func=lambda i: f"H{i}", bind="query-params")
        if not sel.text.strip():
            st.info("Type a sentence in the sidebar to look inside a head.")
            st.stop()
        data = hf_head(source, sel.device, sel.dtype, sel.text, sel.text_b, layer, head)
        st.caption("Q, K and V are the real model's own query/key/value layers applied to the layer's input"
                   + (f"; RoPE has rotated Q and K by position, and this head reads key/value head {data.kv_head}."
                      if data.rope else "."))
except UserError as err:
    if source not in ("toy", "tiny", "bert", "gpt", "induction"):
        family.switch(str(err), ["bert", "gpt"], "ih")
    else:
        st.error(str(err))
    st.stop()

tokens = data.tokens
result = steps(data.x, data.q, data.k, data.v, data.scale, data.causal, data.window)
gaps = checks(data, result)  # on every token, before any window
start = 0
if len(tokens) > WINDOW:  # a long text: draw a window of tokens, readable and quick to send
    state.clamp("ih_focus", 0, len(tokens) - WINDOW)
    start = st.slider(f"Tokens shown ({WINDOW} at a time)", 0, len(tokens) - WINDOW, 0, key="ih_focus",
                      **state.BIND,
                      help="Moves the window; the head still attends over the whole text.")
    st.info(f"This text has {len(tokens)} tokens; the panels show tokens {start}–{start + WINDOW - 1} "
            f"(“{readable(tokens[start])}” to “{readable(tokens[start + WINDOW - 1])}”). Every number is computed on "
            "the whole text, so a softmax row here may sum to less than 1: the rest of its weight lies outside "
            "the window.")
    result = window(result, start, WINDOW)
    tokens = tokens[start:start + WINDOW]
show.explain(
    "A head turns each token's vector into a query, a key and a value. Each query is compared with every "
    "key (a dot product), the scores are scaled and, in a decoder, masked so no token sees the future; "
    "softmax turns each row into weights that sum to 1, and the output is the weighted mix of values. "
    "Each line below is one panel of **Step by step**, in order.",
    *explain_steps(),
)
st.success(f"The last step equals torch.nn.functional.scaled_dot_product_attention on the same Q, K, V "
           f"(largest difference {gaps['sdpa']:.1e}).")
if "model" in gaps:
    st.success(f"softmax(QKᵀ/√d_k) from the model's Q and K equals the model's own attention weights "
               f"(largest difference {gaps['model']:.1e}).")

steps_tab, scale_tab, mask_tab, neuron_tab = st.tabs(
    ["Step by step", "Why divide by √d_k", "What the causal mask does", "One query · one key"],
    key="ih_tab", bind="query-params")  # only the open tab runs and draws
if steps_tab.open:
    with steps_tab:
        st.caption("One panel per line of the head's arithmetic, in order; “How it works” above has each "
                   "line's formula and torch code.")
        for row in (("X",), ("Q", "K", "V"), ("QKᵀ", "÷√d_k", "mask"), ("softmax", "A·V")):
            show.plot(step_row(row, result, tokens), f"inside_head_{'_'.join(row)}", key=f"ih_fig_{row[0]}")
        if not data.scale:
            st.caption("Scaling is off: the ÷√d_k step leaves the scores unchanged.")
        inside_head.mask_note(data)
if scale_tab.open:
    with scale_tab:
        scale_section()
if mask_tab.open:
    with mask_tab:
        mask_section(data, tokens, start, WINDOW)
if neuron_tab.open:
    with neuron_tab:
        neuron_section(data)
