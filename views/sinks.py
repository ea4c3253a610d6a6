"""Attention sinks (Xiao et al. 2023): how much attention each head puts on the first tokens, and a long text
streamed past the model's context with four KV caches."""
import numpy as np
import streamlit as st

from analysis.kv import human_bytes
from experiments.sinks import Run, check_settings
from limits.errors import UserError
from ui import show, state
from ui import sinks as U
from ui.family import BIND
from ui.runtime import cache
from ui.state import selection
from viz import sinks as V

st.title("Attention sinks and streaming")
sel = selection()
show.explain(
    "A causal model's softmax must put each query's weight somewhere. Xiao et al. (2023) found that large language "
    "models park much of it on the first few tokens whatever they say (*attention sinks*): every query can see "
    "them. A sliding-window cache that evicts them changes every softmax, and perplexity jumps; keeping S = 4 sink "
    "tokens beside the W most recent lets a model read far past its training length with a fixed-size cache.  \n"
    "**Positions, as in the paper:** keys are cached *before* RoPE and rotated by their slot in the cache (sinks at "
    "0…S−1, the window after them), not by their place in the text, so no query meets a distance longer than "
    "training showed. The full cache puts token t at position t: past the trained context RoPE turns keys by "
    "angles the model never saw. *Recompute* encodes the last W tokens again at every step: the quality reference, "
    "at W times the work.",
    r"m_{\ell,h} = \frac{1}{|Q|}\sum_{q \in Q} A_{\ell,h}[q, 0] \qquad \text{cache}_t = \{0, \dots, S-1\} \cup "
    r"\{t-W+1, \dots, t\},\quad \mathrm{pos}(\text{slot } j) = j",
    "k = torch.cat([k[:, :, :S], k[:, :, -W:]], dim=2)   # evict: sinks + window, keys kept before RoPE\n"
    "k = k * cos[:n] + rotate_half(k) * sin[:n]          # rotate by cache slot 0..n-1, not text position\n"
    "mass = attentions[l][:, h, 1:, 0].mean()            # output_attentions: weight on position 0",
)
own = U.sidebar_model(sel)
names = U.builtins() + ([own[0]] if own else [])
if not names:
    st.info("The built-in GPT models are not in this copy of the app: pick a decoder in the sidebar.")
    st.stop()

st.header("Where attention parks: the first tokens")
first = st.radio("Mass on", ["position 0", "the first k tokens"], key="sink_what", horizontal=True, **BIND,
                 help="k counts only for the first k tokens; position 0 is the first token alone.") == "position 0"
# k changes only the first-k mass, so its slider shows only with it (the measurement keeps its last k meanwhile)
k = st.session_state.get("sink_k", 4) if first else st.slider("k: how many first tokens count as sinks", 1, 8, 4,
                                                               key="sink_k", **BIND)
found = U.masses(names, sel.device, sel.dtype, k)
if not found:
    st.stop()
show.plot(show.figure(V.sink_heatmaps, {n: m["first" if first else "first_k"] for n, m in found.items()},
                      "Attention on " + ("position 0, mean over query positions 1…" if first else
                                         f"the first {k} tokens, mean over query positions {k}…")),
          "sink_mass", key="sink_heat")
rows = []
for n, m in found.items():
    top = np.unravel_index(np.nanargmax(m["first"]), m["first"].shape)
    rows.append({"model": n, "trained with": U.VARIANTS.get(n, "the sidebar's model"),
                 "windows × tokens": f"{m['windows']} × {m['tokens'] // m['windows']}",
                 "last layer, mean of heads": round(float(m["first"][-1].mean()), 3),
                 "all heads": round(float(m["first"].mean()), 3),
                 "strongest head": f"L{top[0]} H{top[1]}: {m['first'][top]:.3f}",
                 "uniform attention": round(m["uniform_first"], 3)})
st.dataframe(rows, hide_index=True)
st.caption("Mass on position 0 over the held-out Python reference, each window starting as the model was trained "
           "(<s>, <sink> or text). Uniform attention would give 1/(q+1) on average. " + U.conclusion(found)
           + (" The tiny decoder reads digit strings of at most 21 tokens: its figures are those strings'."
              * ("tiny" in found)))
L, H = next(iter(found.values()))["first"].shape
heads = ["mean of all heads"] + [f"L{a} H{b}" for a in range(L) for b in range(H)]
if all(m["first"].shape == (L, H) for m in found.values()):
    which = st.selectbox("Curve of", heads, key="sink_head", **BIND)
else:
    which = heads[0]
pick = (lambda p: np.nanmean(p, axis=(0, 1))) if which == heads[0] else (
    lambda p: p[int(which.split()[0][1:]), int(which.split()[1][1:])])
show.plot(show.figure(V.per_position, {n: pick(m["per_position"]) for n, m in found.items()},
                      max((m["uniform"] for m in found.values()), key=len), which), "sink_curve", key="sink_curve")

st.header("Streaming past the context: four caches")
llama = [n for n in names if n in U.VARIANTS or U.streamable(own[1])]
if own and own[0] not in llama:
    st.caption("The sidebar's model is not offered here: the streaming caches are written for Llama-style language "
               "models (RoPE in every layer)" + (" and the tiny decoder reads 21 positions of digits, no long text."
                                                  if own[0] == "tiny" else "."))
if not llama:
    st.stop()
c = st.columns([2, 1, 1, 1])
name = c[0].selectbox("Model for the streaming experiment", llama, key="sink_model", **BIND,
                      format_func=lambda n: f"{n} ({U.VARIANTS.get(n, 'sidebar')})",
                      help="Chosen here, apart from the sidebar's model: the streaming caches are written for "
                           "Llama-style language models, the built-in GPT layouts or a decoder from the sidebar.")
cap = U.caps()
state.clamp("sink_tokens", 16, cap)
n_tokens = int(c[1].number_input(f"Text tokens (≤ {cap})", 16, cap, min(512, cap), step=64, key="sink_tokens", **BIND))
window = int(c[2].number_input("Window W", 1, 1024, 60, key="sink_w", **BIND))
sinks = int(c[3].number_input("Sinks S", 0, 64, 4, key="sink_s", **BIND))
source = st.radio("Text", ["reference", "sidebar"], horizontal=True, key="sink_text", **BIND,
                  format_func={"reference": "held-out Python reference", "sidebar": "the sidebar's text"}.get)
dec = cache.model(name, sel.device, sel.dtype)
try:
    ids = U.text_ids(name, sel.device, sel.dtype, source, sel.text, n_tokens)
    check_settings(ids.shape[1], window, sinks)
except UserError as err:
    st.error(str(err))
    st.stop()
st.caption(f"{ids.shape[1]} tokens, {ids.shape[1] / dec.max_tokens:.1f}× the trained context of {dec.max_tokens}; "
           f"the streaming cache holds at most S + W = {sinks + window} positions. Each cache scores every token "
           "one step at a time, so this takes seconds.")
runs = U.stream(name, sel, dec, ids, window, sinks)
if runs:
    field = lambda f: {c_: r[f] for c_, r in runs.items()}  # noqa: E731
    show.plot(show.figure(V.nll, field("nll"), window, sinks, dec.max_tokens), "sink_nll", key="sink_nll")
    show.plot(show.figure(V.cache_size, field("entries"), field("nbytes"), window, sinks), "sink_cache",
              key="sink_cache")
    table = []
    for c_, r in runs.items():
        s = Run(**r).summary()
        table.append({"cache": V.cache_label(c_, window, sinks), "NLL, last half": round(s["nll"], 3),
                      "perplexity": round(s["ppl"], 1), "peak positions": s["peak_entries"],
                      "peak bytes": human_bytes(s["peak_bytes"]), "ms per token (median)": round(s["ms_per_token"], 2)})
    st.dataframe(table, hide_index=True)
    gap = Run(**runs["window"]).summary()["nll"] - Run(**runs["window_sinks"]).summary()["nll"]
    st.markdown(f"Keeping the {sinks} first tokens changes the NLL of the last half by **{-gap:+.3f} nats** against "
                f"the plain window of {window}" + (": in the paper's large models evicting them makes perplexity "
                                                   "explode; here they hold little attention, so little is lost."
                                                   if abs(gap) < 0.1 else "."))
    st.caption("NLL in nats of each next token, averaged over the second half of the text. Bytes are the keys and "
               "values the cache tensors hold (recompute: those its pass over the window builds); times are this "
               "server's, shared with other requests.")
