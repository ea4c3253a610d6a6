"""Heads: every layer × head of the current text at a glance, and one head up close."""
import numpy as np
import streamlit as st

import limits
from analysis.special import hide_special, present
from ui import export, family
from ui.classroom import presenter
from ui.runtime import cache, work
from ui.show import explain, plot
from ui.state import selection
from viz import heads as H
from viz.bertviz_offline import head_view_html, height, model_view_html


@cache.memo("results", spinner="Writing the bertviz page…")
def bertviz_page(model: str, device: str, dtype: str, text: str, text_b: str | None, view: str, new: int,
                 part: str, hide: bool, layer: int) -> str:
    tr = cache.trace(model, device, dtype, text, text_b, new).stacks()[part]
    return head_view_html(tr, layer, hide=hide) if view == "Head view" else model_view_html(tr, hide=hide)


@cache.memo("results", spinner="Pooling every head into tiles…")
def overview_tiles(model: str, device: str, dtype: str, text: str, text_b: str | None, new: int, part: str,
                   hide: bool, first: int, fit: int):
    """The overview's pooled tiles (H.overview_pool) of layers first..first + fit, once per server: a rerun or a
    fresh link draws them from here, read-only, instead of reading the whole (L, H, T, T) attention again."""
    tr = cache.trace(model, device, dtype, text, text_b, new).stacks()[part]

    def layer(l: int) -> tuple[np.ndarray, int]:  # one layer at a time: hiding makes float64 of one layer only
        w = tr.weights[l:l + 1]                                                      # (1, H, T, T)
        return H.overview_pool(hide_special(w, tr.tokens, tr.key_tokens)[0] if hide else w, fit * tr.n_heads)

    layers = [layer(l) for l in range(first, first + fit)]
    return np.concatenate([p for p, _ in layers]), layers[0][1]  # (fit, H, nq, nk): its own array, not the trace's


st.title("Every head at a glance")
sel = selection()
shown = family.text_trace("heads", sel)
if shown is None:
    st.stop()
trace = shown.trace
label = shown.model.label
dims = "" if "layers" in label else f" · {trace.n_layers} layers × {trace.n_heads} heads"
st.container(key="heads_summary").caption(f"{label}{dims} · {len(trace.tokens)} tokens · {trace.kind} attention"
                                          f"{family.windows(shown.model, len(trace.tokens))}")
grid = st.container()  # the overview; a projector shows it first, above its controls, to fit one screen

c1, c2 = st.columns(2)
specials = present(trace.tokens, trace.key_tokens)  # what this model put around the text: [CLS]/[SEP], <s>, …
if specials:
    hide = c1.toggle(f"Hide {' '.join(specials)} and renormalise rows", key="heads_hide", bind="query-params")
else:
    hide = False
    c1.caption("No special tokens to hide: this model adds none ([CLS], [SEP], <s>, …) to this text.")
shared = c2.radio("Colour scale", ["per head", "shared"], horizontal=True, key="heads_scale",
                  bind="query-params") == "shared"
tokens, key_tokens = trace.tokens, trace.key_tokens
if hide:  # only what is drawn is renormalised (one head, or the kept tiles), never the whole (L, H, T, T) per run
    _, tokens, key_tokens = hide_special(trace.weights[0, 0], tokens, key_tokens)
    st.caption("Special tokens hidden: each row is renormalised over the remaining tokens, "
               "so these are not the model's raw weights.")
if not tokens or not key_tokens:
    st.info("Nothing is left once special tokens are hidden; turn the option off.")
    st.stop()

clicks = st.session_state.get("heads_clicks", 0)
event = st.session_state.get(f"heads_overview_{clicks}")
picked = H.clicked_head(event["selection"]["points"][0]) if event and event["selection"]["points"] else None
if picked is not None:  # a click opens that head below; a fresh chart key clears the selection for the next click
    st.session_state["heads_layer"], st.session_state["heads_head"] = picked
    st.session_state["heads_clicks"] = clicks = clicks + 1

with grid if presenter.on() else st.container():  # on a projector the grid's own axes (layer, head) say it
    fit, first = H.layers_that_fit(trace.n_layers, trace.n_heads), 0
    if fit < trace.n_layers:  # over the cell budget even at the smallest tiles: a slice of layers, never a frozen tab
        st.warning(f"{trace.n_layers * trace.n_heads:,} heads are more than the overview draws at once "
                   f"({H.CELLS:,} cells, {H.MIN_TILE} a side at least): it shows {fit} layers at a time.")
        first = st.slider("First layer of the overview", 0, trace.n_layers - fit, 0, key="heads_first")
    side = H.tile_side(fit * trace.n_heads)
    pooled = (f" Over {side} tokens, each cell is a block of tokens and shows its largest weight."
              if max(len(tokens), len(key_tokens)) > side else "")
    if not presenter.on():
        st.header("Overview: rows are layers, columns are heads")
        st.caption("Each small square is one head: query tokens down, key tokens across. Hover a head for its "
                   "largest weight; click it to open it below, or pick it in the Layer and Head boxes (the keyboard's "
                   f"way).{pooled}")
    tiles = overview_tiles(sel.model, sel.device, sel.dtype, sel.text, sel.text_b, shown.new_tokens, shown.part,
                           hide, first, fit)
    plot(H.overview_of(*tiles, tokens, key_tokens, shared_scale=shared, first_layer=first),
         "heads-overview", key=f"heads_overview_{clicks}", alt=H.overview_alt(*tiles, tokens, key_tokens, first),
         table=H.overview_table(*tiles, tokens, key_tokens, first), min_width=160 + 28 * trace.n_heads,
         on_select="rerun", selection_mode="points")

st.header("One head up close")
c1, c2 = st.columns(2)
layer = c1.selectbox("Layer", range(trace.n_layers), key="heads_layer", format_func=lambda i: f"L{i}",
                     bind="query-params")
h = c2.selectbox("Head", range(trace.n_heads), key="heads_head", format_func=lambda i: f"H{i}", bind="query-params")
if len(tokens) > 60:
    st.caption(f"{len(tokens)} tokens: the axes name every few of them. Drag over the figure to zoom in and name "
               "them all (double-click zooms out); hovering a cell names both tokens.")
main, side = st.columns([3, 1])
with main:
    one = hide_special(trace.weights[layer, h], trace.tokens, trace.key_tokens)[0] if hide else trace.weights[layer, h]
    plot(H.head(one, tokens, key_tokens, f"L{layer} H{h}"), f"head-L{layer}-H{h}", key="head_fig", table=True)
with side:
    explain(
        "Each query token asks every key token how relevant it is; the answers, turned into "
        "probabilities, say how much of each token's value flows into the query's new vector. "
        "Each row of the heatmap is one such distribution and sums to 1.",
        r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V",
        "weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)  # (B, nh, T, T)",
    )

st.header("bertviz, offline")
if st.toggle("Show bertviz's head view and model view (drawn in this page, no network)", key="heads_bertviz",
             bind="query-params"):
    view = st.radio("bertviz view", ["Head view", "Model view"], horizontal=True, key="heads_bertviz_view",
                    bind="query-params")
    st.caption(f"bertviz's own drawing code, opened on L{layer} (the layer picked above); weights rounded to whole "
               "percents, lines under 0.5% left out. "
               "Head view: hover a token, click a colour to toggle a head. "
               "Model view: click a thumbnail for its detail."
               + (f" {' '.join(specials)} hidden, as above." if hide else ""))
    lines = (trace.n_layers if view == "Model view" else 1) * trace.n_heads * len(tokens) * len(key_tokens)
    budget = work.Budget(lines, limits.current().bertviz_lines, "lines to draw",
                         "shorten the text" + (", or use the head view (one layer at a time)" if view == "Model view"
                                               else ""))
    if work.offer(budget):
        key = "head_view" if view == "Head view" else "model_view"
        st.iframe(bertviz_page(sel.model, sel.device, sel.dtype, sel.text, sel.text_b, view, shown.new_tokens,
                               shown.part, hide, layer),
                  height=height(max(len(tokens), len(key_tokens)), trace.n_layers, trace.n_heads, key),
                  alt=f"bertviz's {view.lower()} of the attention above, drawn with the mouse in mind; the heatmaps "
                      "above and their descriptions hold the same weights")

if not presenter.on():  # a projector shows no downloads
    st.header("Download the attention")
    export.buttons(trace, f"attention-{sel.model}", layer, h)
