"""The views' figures for a notebook or a script: plotly Figures drawn from the api's own results (an
AttentionTrace from api.attend, the DataFrames of api.next_token, api.patching, api.corpus, api.attribution and
api.faithfulness) by the same viz/ functions, with the same arguments, as the app's views, and restyled as a light
page shows them (viz.common.readable_text, labels_never_hidden). They render inline with plotly's own renderers in
JupyterLab, Jupyter Notebook, VS Code and Colab, with no network; api.save writes one to .html, .png or .svg.

    t = api.attend(api.load("bert"), "The river bank was dirty")
    api.figures.heads(t)                                   # the Heads view's grid: L0..L5 × H0..H11
    api.figures.head(t, layer=2, head=7)                   # one head up close

What it does not: run anything twice (a figure of a table draws the table's numbers, nothing is recomputed). A
result a figure cannot draw raises ValueError with one sentence, as the api's calls do.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go

import limits
from analysis.graph import in_strength, layer_matrix, layered_graph, pagerank, token_graph
from analysis.rollout import fuse_heads, residual_attention
from analysis.rollout import rollout as _rollout
from analysis.special import hide_special
from analysis.trace import AttentionTrace
from limits.errors import UserError
from viz import attribution as va
from viz import circuits as vci
from viz import corpus as vc
from viz import heads as vh
from viz import kv_cache as vk
from viz import next_token as vn
from viz import patching as vp
from viz.common import labels_never_hidden, readable_text
from viz.graph import collectors_figure, layered_figure, matrices_figure, token_graph_figure
from viz.inside_head import step_row

__all__ = ["heads", "head", "graph", "layers", "rollout", "collectors", "inside_head", "probabilities", "block",
           "lens", "dla", "dla_heads", "attribution", "faithfulness", "patching", "circuit", "corpus", "queries_keys",
           "kv_cache"]
WINDOW = 40  # tokens one layer's graph draws, as views/graph.py
INSIDE_WINDOW = 32  # tokens Inside a head's panels draw, as views/inside_head.py
PANELS = (("X",), ("Q", "K", "V"), ("QKᵀ", "÷√d_k", "mask"), ("softmax", "A·V"))  # Inside a head's rows


MATHJAX = re.compile(r'<script[^>]*src="https?://[^"]*mathjax[^"]*"[^>]*></script>', re.I)


def _without_cdn(renderer: type) -> type:
    """A plotly HTML renderer whose output has no MathJax script from a CDN (plotly's HTML renderers add one to every
    figure; none of these figures writes TeX)."""
    class Offline(renderer):
        def to_mimebundle(self, fig_dict):
            bundle = super().to_mimebundle(fig_dict)
            return {**bundle, "text/html": MATHJAX.sub("", bundle["text/html"])}

    return Offline


def offline_renderers() -> None:
    """plotly's own renderers, with nothing fetched from a CDN: in Colab (whose renderer loads plotly.js from one)
    plotly.js goes inside each output (~4 MB an output); in the classic Notebook plotly.js is inlined once, as plotly
    does, and the MathJax tag is left out. JupyterLab and VS Code draw plotly's mime type with their own plotly.js."""
    import plotly.io as pio
    from plotly.io.base_renderers import HtmlRenderer, NotebookRenderer

    default = pio.renderers.default
    pio.renderers["notebook"] = _without_cdn(NotebookRenderer)()
    pio.renderers["colab_offline"] = _without_cdn(HtmlRenderer)(connected=False, full_html=False, global_init=False)
    pio.renderers.default = "colab_offline" if default == "colab" else default  # names resolved again


offline_renderers()


def _shown(fig: go.Figure) -> go.Figure:
    """As ui.show.plot hands a figure to a light page: chart text that reads on white, every label kept."""
    return labels_never_hidden(readable_text(fig))


def _trace(x, figure: str) -> AttentionTrace:
    if not isinstance(x, AttentionTrace):
        raise ValueError(f"figures.{figure} draws an AttentionTrace (api.attend(model, text)), not a "
                         f"{type(x).__name__}: pass the trace.")
    return x


def _table(x, figure: str, made_by: str, needs: str) -> pd.DataFrame:
    if not isinstance(x, pd.DataFrame) or needs not in x.attrs and needs not in x.columns:
        what = {AttentionTrace: "an AttentionTrace", pd.DataFrame: "another table"}.get(type(x), type(x).__name__)
        raise ValueError(f"figures.{figure} draws the table {made_by} returns, not {what}: call {made_by} first.")
    return x


def _per_head(table: pd.DataFrame, column: str) -> np.ndarray:
    """A per-head column of an api table -> [L, H]."""
    return table[column].to_numpy(dtype=np.float64).reshape(table["layer"].max() + 1, table["head"].max() + 1)


def _layer(trace: AttentionTrace, layer: int) -> int:
    if not -trace.n_layers <= layer < trace.n_layers:
        raise UserError(f"Layer {layer} does not exist: this trace has layers 0 to {trace.n_layers - 1}.")
    return layer % trace.n_layers


def heads(trace: AttentionTrace, shared_scale: bool = False, hide: bool = False) -> go.Figure:
    """The Heads view's overview: rows are layers, columns heads, each tile one head's [Tq, Tk] map pooled to fit
    (block maxima past the tile's side). hide: without [CLS]/[SEP]/<s>, rows renormalised (the view's toggle).
    A model with more heads than the overview draws at once shows its first layers, as the view opens."""
    tr = _trace(trace, "heads")
    fit = vh.layers_that_fit(tr.n_layers, tr.n_heads)
    tokens, keys = tr.tokens, tr.key_tokens
    if hide:
        _, tokens, keys = hide_special(tr.weights[0, 0], tokens, keys)
    tiles = []
    for l in range(fit):  # one layer at a time, as views/heads.py pools them
        w = tr.weights[l:l + 1]                                                     # (1, H, Tq, Tk)
        tiles.append(vh.overview_pool(hide_special(w, tr.tokens, tr.key_tokens)[0] if hide else w, fit * tr.n_heads))
    pooled, f = np.concatenate([p for p, _ in tiles]), tiles[0][1]                  # (fit, H, nq, nk)
    return _shown(vh.overview_of(pooled, f, tokens, keys, shared_scale=shared_scale, first_layer=0))


def head(trace: AttentionTrace, layer: int, head: int, hide: bool = False) -> go.Figure:
    """The Heads view's one head up close: query tokens down, key tokens across, weight by colour."""
    tr = _trace(trace, "head")
    layer = _layer(tr, layer)
    if not 0 <= head < tr.n_heads:
        raise UserError(f"Head {head} does not exist: layer {layer} has heads 0 to {tr.n_heads - 1}.")
    one, tokens, keys = tr.weights[layer, head], tr.tokens, tr.key_tokens                  # (Tq, Tk)
    if hide:
        one, tokens, keys = hide_special(one, tokens, keys)
    return _shown(vh.head(one, tokens, keys, f"L{layer} H{head}"))


def graph(trace: AttentionTrace, layer: int = -1, head: int | None = None, fusion: str = "mean", top_k: int | None = 3,
          threshold: float = 0.0, layout: str = "columns") -> go.Figure:
    """Attention as a graph, One layer: tokens as nodes, an edge per kept weight (top_k per token, or every weight
    above threshold when top_k is None), one head or every head fused. Over 40 tokens it draws the first 40."""
    tr = _trace(trace, "graph")
    layer, square = _layer(tr, layer), tr.kind != "cross"
    m, drawn = layer_matrix(tr.weights, layer, head, fusion), tr.tokens                    # (Tq, Tk)
    if square and len(drawn) > WINDOW:
        m, drawn = m[:WINDOW, :WINDOW], drawn[:WINDOW]
    g = token_graph(m, drawn, None if square else tr.key_tokens, threshold=threshold,
                    top_k=None if top_k is None else min(top_k, len(tr.key_tokens)), first=0)
    return _shown(token_graph_figure(g, layout, f"L{layer}, {'fused heads' if head is None else f'H{head}'}"))


def _square(trace: AttentionTrace, figure: str) -> AttentionTrace:
    tr = _trace(trace, figure)
    if tr.kind == "cross":
        raise UserError(f"figures.{figure} follows attention through the residual stream, which cross-attention "
                        "does not have: pass trace.parts['encoder'] or ['decoder'].")
    return tr


def layers(trace: AttentionTrace, residual: float = 0.5, fusion: str = "mean", top_k: int = 2) -> go.Figure:
    """Attention as a graph, All layers: every layer's fused attention with the residual mixed in, top_k edges per
    token."""
    tr = _square(trace, "layers")
    top_k = min(top_k, len(tr.tokens))
    a_hat = residual_attention(tr.weights, residual, fusion)                               # (L, T, T)
    title = f"All {tr.n_layers} layers, residual mixed in (top {top_k} edges per token)"
    return _shown(layered_figure(layered_graph(a_hat, tr.tokens, top_k=top_k), title))


def rollout(trace: AttentionTrace, residual: float = 0.5, fusion: str = "mean", flow: bool = True) -> go.Figure:
    """Raw last-layer attention, rollout and (flow=True, up to limits' flow_tokens tokens, as in the app) exact
    attention flow side by side, rows the top layer's tokens, columns the input tokens."""
    tr = _square(trace, "rollout")
    panels = [(f"raw attention, L{tr.n_layers - 1}", fuse_heads(tr.weights[-1:], fusion)[0]),
              ("rollout", _rollout(tr.weights, residual, fusion))]
    if flow and len(tr.tokens) <= limits.current().flow_tokens:
        from analysis.flow import attention_flow

        panels.append(("flow", attention_flow(tr.weights, residual, fusion)))
    return _shown(matrices_figure(panels, tr.tokens))


def collectors(trace: AttentionTrace, fusion: str = "mean") -> go.Figure:
    """Who collects attention: the weight each key token receives per layer, and its PageRank (self-attention)."""
    tr = _trace(trace, "collectors")
    fused = fuse_heads(tr.weights, fusion)                                                 # (L, Tq, Tk)
    rank = pagerank(fused) if tr.kind != "cross" else None
    return _shown(collectors_figure(in_strength(fused), rank, tr.key_tokens))


def inside_head(model, text: str, layer: int, head: int, text_b: str | None = None) -> list[go.Figure]:
    """Inside a head, Step by step: four figures (X; Q, K, V; QKᵀ, ÷√d_k, mask; softmax, A·V) of one head of a
    BERT-like encoder or an hf: decoder on `text`, the first 32 tokens drawn (every number over the whole text)."""
    from analysis.inside_head import steps, window
    from models.contract import HEAD_QKV, AttentionModel, named

    if not isinstance(model, AttentionModel) or model.family not in HEAD_QKV:
        raise UserError(f"figures.inside_head reads a transformers model's own Q, K and V; "
                        f"{named(model)} has none: use api.load('bert') or 'gpt'.")
    data = model.head_qkv(text, layer, head, text_b) if text_b else model.head_qkv(text, layer, head)
    result = steps(data.x, data.q, data.k, data.v, data.scale, data.causal)
    tokens = data.tokens
    if len(tokens) > INSIDE_WINDOW:
        result, tokens = window(result, 0, INSIDE_WINDOW), tokens[:INSIDE_WINDOW]
    return [_shown(step_row(row, result, tokens)) for row in PANELS]


def probabilities(model, text: str, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float = 1.0) -> go.Figure:
    """Next token, Probabilities: the most likely next tokens after softmax, temperature, top-k and top-p."""
    from experiments.logit_lens import encode, token_names
    from experiments.next_token import Settings, last_logits, stages

    ids, _ = encode(model, text)                                                          # (1, T)
    st_ = stages(last_logits(model, ids), Settings(temperature, top_k or None, top_p, True, 0))
    return _shown(vn.probs_figure(token_names(model, [int(i) for i in st_["ids"]]), st_))


def block(parts: pd.DataFrame) -> list[go.Figure]:
    """Next token, The whole block: the residual stream's size after each stage, and each head's and MLP's write."""
    t = _table(parts, "block", "api.next_token(model, text)", "stages")
    return [_shown(vn.path_figure(t.attrs["stages"])), _shown(vn.writes_figure(t.attrs["writes"]))]


def lens(parts: pd.DataFrame) -> go.Figure:
    """Next token, Logit lens: each layer's residual read through the final norm and unembedding."""
    t = _table(parts, "lens", "api.next_token(model, text)", "lens_target")
    return _shown(vn.lens_figure(t.attrs["lens"], t.attrs["target"], t.attrs["lens_target"]))


def dla(parts: pd.DataFrame, n: int = 16) -> go.Figure:
    """Next token, Direct logit attribution: the n parts (heads, MLPs, embedding, bias) with the largest share."""
    t = _table(parts, "dla", "api.next_token(model, text)", "heads")
    return _shown(vn.dla_bars(dict(zip(t["part"], t["logit"])), t.attrs["target"], n))


def dla_heads(parts: pd.DataFrame) -> go.Figure:
    """Next token, Direct logit attribution: each head's direct share of the logit as a layer × head map."""
    t = _table(parts, "dla_heads", "api.next_token(model, text)", "heads")
    return _shown(vn.dla_heatmap(t.attrs["heads"], t.attrs["target"]))


def attribution(table: pd.DataFrame) -> go.Figure:
    """Attribution: one strip of token colours per method, each on its own largest |score|."""
    from experiments.attribution_methods import LABELS

    t = _table(table, "attribution", "api.attribution(model, text)", "results")
    return _shown(va.strips(t.attrs["results"], LABELS))


def faithfulness(table: pd.DataFrame) -> go.Figure:
    """Attribution, Over rows: comprehensiveness and sufficiency against the share of tokens removed, per method."""
    from experiments.attribution_methods import LABELS

    t = _table(table, "faithfulness", "api.faithfulness(model, texts)", "curves")
    return _shown(va.curves(t.attrs["curves"], t.attrs["fractions"], LABELS, t.attrs["value"]))


def patching(table: pd.DataFrame) -> go.Figure:
    """Patching: each head's restored fraction of the clean-corrupt logit difference, a layer × head map."""
    t = _table(table, "patching", "api.patching(model, clean, corrupt, answer, wrong)", "restored")
    return _shown(vp.heads_figure(_per_head(t, "restored"), t.attrs["rows"], t.attrs["metric"]))


def circuit(table: pd.DataFrame, top: int = 20) -> go.Figure:
    """Circuits: the `top` strongest edges of api.circuit(model, pairs) as the Circuits view's layered graph (every
    sender of the table drawn as a node, as the view draws every one of the model's)."""
    t = _table(table, "circuit", "api.circuit(model, pairs)", "receiver")
    ranked = t.iloc[t.score.abs().argsort(kind="stable")[::-1]].reset_index(drop=True)
    shown = ranked.head(top).assign(score=lambda d: d.score.round(4))
    return _shown(vci.graph_figure(shown, list(dict.fromkeys(ranked.sender)) + ["logits"]))


def corpus(table: pd.DataFrame, behaviour: str = "previous token") -> go.Figure:
    """Heads across a corpus: one behaviour's mean over the corpus for every head (a share, or distance in
    tokens), as the Corpus view's map."""
    from analysis.patterns import FEATURES

    t = _table(table, "corpus", "api.corpus(model, sentences)", "consistency")
    if behaviour not in FEATURES:
        raise UserError(f"'{behaviour}' is not a behaviour: choose one of {', '.join(FEATURES)}.")
    return _shown(vc.behaviour_map(_per_head(t, behaviour), behaviour, behaviour != "distance"))


def queries_keys(model, sentences: list[str], layer: int, head: int, method: str = "PCA",
                 colour_by: str = "query or key", max_tokens: int | None = None) -> go.Figure:
    """Heads across a corpus, Queries and keys: one head's queries and keys over the tokens of the first sentences
    (up to max_tokens: the app's cap, a tenth of it for t-SNE) in one 2-D plane (Yeh et al. 2023); colour_by
    "query or key", "position" or "token". A BERT-like encoder or a Llama-style / GPT-2 decoder."""
    from analysis import qk_embedding
    from analysis.token_context import hover
    from experiments.corpus import qk_points

    if colour_by not in ("query or key", "position", "token"):
        raise UserError(f"Colour by '{colour_by}' is not offered: choose query or key, position or token.")
    if max_tokens is None:
        max_tokens = limits.current().corpus_qk_tokens // (10 if method == "t-SNE" else 1)
    pts = qk_points(model, tuple(sentences), layer, max_tokens)
    if not 0 <= head < pts["q"].shape[1]:
        raise UserError(f"Head {head} does not exist: layer {layer} has heads 0 to {pts['q'].shape[1] - 1}.")
    q2, k2 = qk_embedding.project(pts["q"][:, head], pts["k"][:, head], method)              # (N, 2) each
    return _shown(vc.qk_scatter(q2, k2, colour_by, pts["pos"], pts["tokens"], hover(pts),
                                f"L{layer} H{head}: queries and keys ({method})"))


def kv_cache(table: pd.DataFrame) -> list[go.Figure]:
    """KV cache: latency per token and total time with and without the cache, and the cache's memory measured
    against the formula (three figures, as the view draws them)."""
    t = _table(table, "kv_cache", "api.kv_cache(...)", "cached_s")
    seconds = {c.removesuffix("_s"): t[c].tolist() for c in t.columns if c.endswith("_s")}
    return [_shown(vk.latency(seconds)), _shown(vk.cumulative(seconds)),
            _shown(vk.memory(t["positions"].tolist(), t["cache_bytes"].tolist(), t.attrs["per_token"]))]
