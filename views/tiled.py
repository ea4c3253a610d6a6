"""Tiled attention: one query block of a real head walked over the key blocks with the online softmax, then the cost."""
from __future__ import annotations

import numpy as np
import streamlit as st

from analysis.tokens import readable_all
from experiments.attention_cost import GPU_METHODS
from limits.errors import UserError
from ui import efficient as E
from ui import family, show, state
from viz import efficient as V

st.title("Tiled attention")
sel = state.selection()
tr = show.current_trace(sel)
if tr is None:
    st.stop()
show.explain(
    "Dense attention writes the whole n × n score matrix before its softmax. FlashAttention never does: it reads "
    "keys and values one block at a time and keeps, for each query, a running max m, a running sum l and a partial "
    "output O. When a new block raises the max, the old l and O are scaled down by e^(m_old − m_new), so at the "
    "end O / l is exactly the softmax-weighted sum. Memory grows like n, not n².",
    r"m' = \max(m, \max_j s_j),\;\; l' = e^{m-m'}\,l + \sum_j e^{s_j-m'},\;\; "
    r"O' = e^{m-m'}\,O + \sum_j e^{s_j-m'}\,v_j,\;\; \mathrm{out} = O/l",
    "out = tiled_attention(q, k, v, causal=causal, block=64)  # only (B, H, T, 64) scores at a time",
)
c = st.columns(5)
E.keep_index("eff_tlayer", tr.n_layers)
E.keep_index("eff_thead", tr.n_heads)
layer = c[0].selectbox("layer", range(tr.n_layers), key="eff_tlayer", format_func="L{}".format, **E.BIND)
head = c[1].selectbox("head", range(tr.n_heads), key="eff_thead", format_func="H{}".format, **E.BIND)
block = c[2].slider("block size", 1, 16, 4, key="eff_tblock", **E.BIND)
qblock = c[3].number_input("query block", 0, 511, 0, key="eff_qblock", **E.BIND)
causal = c[4].toggle("causal", tr.kind == "causal", key="eff_tcausal", **E.BIND,
                     help="Query i sees keys 0..i only; key blocks wholly after the query block are never read.")
try:
    d = E.head_qkv(sel.model, sel.device, sel.dtype, sel.text, sel.text_b, layer, head)
except UserError as err:  # a model whose q, k, v this app cannot take out: say why, offer one that works
    family.switch(str(err), ["bert", "gpt", "tiny"], "eff_tiled")
    st.stop()
try:
    q, steps, exact, scores, whole_error = E.walk(sel.model, sel.device, sel.dtype, sel.text, sel.text_b, layer, head,
                                                  int(qblock), block, causal)
except UserError as err:
    st.error(str(err))
    st.stop()
tokens, T = d.tokens, q.shape[0]
i0, i1 = int(qblock) * block, min((int(qblock) + 1) * block, T)
E.keep_index("eff_step", len(steps))
step = st.select_slider("key block", list(range(len(steps))), key="eff_step", **E.BIND)
s = steps[step]

st.header(f"Query block {int(qblock)} (tokens {i0}–{i1 - 1}) meets key block {step} (keys {s.keys[0]}–"
             f"{s.keys[1] - 1})")
left, right = st.columns([3, 2])
with left:
    show.plot(show.figure(V.tile_map, scores, tokens, (i0, i1), s.keys, s.keys[0], causal), "tiled_map", key="eff_map")
    st.caption(f"Dotted: the query block. Red: the key block now. Blue: key blocks already folded in. {T} tokens "
               f"in blocks of {block}: this query block reads {len(steps)} key block(s)"
               f"{' (causal: none after it)' if causal else ''}. Head L{layer} H{head} of {sel.model}.")
with right:
    show.explain(
        "At this step the kernel holds only the red tile: the scores of this query block against this key block. "
        "Everything to its left was folded into m, l and O and thrown away; nothing to its right exists yet.",
        r"S_{ij} = q_i\cdot k_j/\sqrt{d},\quad i \in \text{query block},\; j \in \text{key block}",
        "S = Q_i @ K_j.T * d ** -0.5  # (block, block): the only scores that exist now")

left, right = st.columns([3, 2])
rows = [f"{i}: {t}" for i, t in enumerate(readable_all(tokens))][i0:i1]
with left:
    st.dataframe({
        "query": rows, "m before": s.m_prev.numpy().round(3), "tile max": s.S.amax(-1).numpy().round(3),
        "m after": s.m.numpy().round(3), "α": s.alpha.numpy().round(3), "l before": s.l_prev.numpy().round(3),
        "l after": s.l.numpy().round(3), "|O/l − exact|": (s.out - exact).abs().amax(-1).numpy(),
    }, hide_index=True, column_config={"|O/l − exact|": st.column_config.NumberColumn(format="%.1e")})
with right:
    show.explain(
        "The tile's max may beat the running max. Then everything summed so far was exponentiated against a max "
        "that was too small: multiplying l and O by α = e^(m − m′) puts them on the new max, as if they had used it "
        "from the start. α = 1 when the max did not move; 0 on the first block (m starts at −∞).",
        r"\alpha = e^{m-m'},\quad P = e^{S-m'},\quad l' = \alpha\,l + \textstyle\sum_j P_{ij},\quad "
        r"O' = \alpha\,O + PV",
        "m_new, l_new, O_new, alpha, P = online_update(m, l, O, S, V_j)  # analysis/efficient.py")

left, right = st.columns([3, 2])
errors = np.array([float((x.out - exact).abs().max()) for x in steps])
with left:
    ms, ls = (np.stack([getattr(x, a).numpy() for x in steps]) for a in ("m", "l"))  # (steps, rows) each
    show.plot(show.figure(V.online_state, ms, ls, rows, step), "tiled_state", key="eff_state")
with right:
    st.metric("max |O/l − exact| after this key block", f"{errors[step]:.1e}",
              help="O/l against torch's scaled_dot_product_attention on these rows; at the last block only "
                   "rounding is left.")
    show.explain(
        "Why the result is exact, not an approximation: after the last block every term has been rescaled to the "
        "final max, so l is the softmax's denominator and O its numerator. After fewer blocks, O / l is exact "
        "attention over the keys seen so far, which is why the error falls to rounding only at the end.",
        r"\frac{O}{l} = \frac{\sum_j e^{s_j-m}v_j}{\sum_j e^{s_j-m}} = \sum_j \mathrm{softmax}(s)_j\,v_j",
        "out = O / l  # once, after the last key block (FlashAttention-2 divides at the end)")
st.success(f"The whole head, tiled in blocks of {block}: max |tiled − torch's scaled_dot_product_attention| = "
           f"{whole_error:.1e} over {T} tokens; this block's last step: {errors[-1]:.1e}.")

st.header("What it costs, measured: memory of dense and tiled attention against n")
device = "cuda" if sel.device.startswith("cuda") else "cpu"
E.cost_section(("dense", "tiled", "sdpa") + (GPU_METHODS if device == "cuda" else ()), device, key="eff_tcost")
