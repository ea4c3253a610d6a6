"""Heads: every layer × head of the current text at a glance, and one head up close."""
import streamlit as st

from analysis.special import hide_special
from ui import cache
from ui.show import current_trace, explain, plot
from ui.state import selection
from viz.heatmaps import head, overview

st.title("Every head at a glance")
sel = selection()
trace = current_trace(sel)
if trace is None:
    st.stop()
label = cache.model(sel.model, sel.device, sel.dtype).label
dims = "" if "layers" in label else f" · {trace.n_layers} layers × {trace.n_heads} heads"
st.caption(f"{label}{dims} · {len(trace.tokens)} tokens · {trace.kind} attention")

c1, c2 = st.columns(2)
hide = c1.toggle("Hide [CLS]/[SEP] and renormalise rows", key="hide_special")
shared = c2.radio("Colour scale", ["per head", "shared"], horizontal=True, key="scale") == "shared"
weights, tokens, key_tokens = trace.weights, trace.tokens, trace.key_tokens
if hide:
    weights, tokens, key_tokens = hide_special(weights, tokens, key_tokens)
    st.caption("Special tokens hidden: each row is renormalised over the remaining tokens, "
               "so these are not the model's raw weights.")
if not tokens or not key_tokens:
    st.info("Nothing is left once special tokens are hidden; turn the option off.")
    st.stop()

st.subheader("Overview: rows are layers, columns are heads")
st.caption("Each small square is one head: query tokens down, key tokens across. Hover for tokens and weight.")
plot(overview(weights, tokens, key_tokens, shared_scale=shared), "heads-overview", key="overview")

st.subheader("One head up close")
c1, c2 = st.columns(2)
layer = c1.selectbox("Layer", range(trace.n_layers), key="layer", format_func=lambda i: f"L{i}")
h = c2.selectbox("Head", range(trace.n_heads), key="head", format_func=lambda i: f"H{i}")
main, side = st.columns([3, 1])
with main:
    plot(head(weights[layer, h], tokens, key_tokens, f"Layer {layer}, head {h}"), f"head-L{layer}-H{h}", key="head_fig")
with side:
    explain(
        "Each query token asks every key token how relevant it is; the answers, turned into "
        "probabilities, say how much of each token's value flows into the query's new vector. "
        "Each row of the heatmap is one such distribution and sums to 1.",
        r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V",
        "weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)  # (B, nh, T, T)",
    )
