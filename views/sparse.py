"""Sparse attention: seven patterns on the user's tokens, their pair counts and reach, laid on the real model."""
from __future__ import annotations

import numpy as np
import streamlit as st

from analysis import sparsity
from limits.errors import UserError
from ui import efficient as E
from ui import family, show, state
from viz import efficient as V


def patterns(sel: state.Selection, n: int, causal: bool) -> tuple[E.Settings, dict]:
    """The knobs, each pattern's mask on the user's n tokens and its pair counts; returns settings and masks."""
    c = st.columns(7)
    cfg = E.Settings(
        w=c[0].slider("window w (each side)", 0, 32, 2, key="eff_w", **E.BIND),
        dilation=c[1].slider("dilation", 1, 8, 2, key="eff_dilation", **E.BIND),
        block=c[2].slider("block size", 1, 64, 4, key="eff_block", **E.BIND),
        band=c[3].slider("blocks each side", 0, 8, 0, key="eff_band", **E.BIND),
        every=c[4].slider("global block every", 0, 8, 3, key="eff_every", **E.BIND,
                          help="Every k-th block sees and is seen by every block (0: none), as in BigBird."),
        n_random=c[6].slider("random keys (BigBird)", 0, 8, 2, key="eff_random", **E.BIND),
    )
    text = c[5].text_input("global tokens", "0", key="eff_globals", max_chars=80, **E.BIND,
                           help="Positions that see and are seen by every token (0 is [CLS] for BERT); BigBird "
                                "makes the first that many tokens global.")
    try:
        cfg = E.Settings(**{**cfg.kwargs(), "globals_": tuple(sparsity.parse_globals(text))})
    except UserError as err:
        st.error(str(err))
    masks, errors = E.masks(n, E.build_length(sel.model, sel.device, sel.dtype, sel.text, n), cfg, causal)
    for message in dict.fromkeys(errors.values()):
        st.error(message)
    counts = {k: int(m.sum()) for k, m in masks.items()}
    st.header(f"Each pattern on your {n} tokens" + (" (the first 128 drawn)" if n > 128 else ""))
    lower = np.tril(np.ones((min(n, 128),) * 2, dtype=bool)) if causal else None
    show.plot(show.figure(V.pattern_grid, {k: m[:128, :128] for k, m in masks.items()}, sparsity.TITLES, lower, counts),
              "sparse_patterns", key="eff_grid")
    if causal:
        st.caption("A decoder: its causal mask already hides the upper triangle (tinted); a pattern only removes more.")
    left, right = st.columns(2)
    with left:
        show.plot(show.figure(V.pair_counts, counts, n, sparsity.SHORT), "sparse_pairs")
    with right:
        show.plot(show.figure(V.pairs_vs_n, *E.count_curves(cfg, n, 16_384), sparsity.SHORT), "sparse_pairs_vs_n")
    return cfg, masks


def reach(tokens: list[str], masks: dict) -> str:
    """The receptive field of the chosen pattern after L layers; returns that pattern's name."""
    n = len(tokens)
    st.header("Receptive field: what can reach a token after L layers")
    c = st.columns(3)
    names = list(masks)
    focus = c[0].selectbox("pattern", names, index=names.index("sliding_window") if "sliding_window" in names else 0,
                           format_func=sparsity.TITLES.get, key="eff_pattern", **E.BIND)
    layers = c[1].slider("layers L", 1, 12, 6, key="eff_layers", **E.BIND)
    query = min(c[2].slider("token", 0, 511, 4, key="eff_query", **E.BIND), n - 1)  # past the end: the last token
    r = E.reach(masks[focus], layers)
    full = sparsity.full_reach_layer(r)
    left, right = st.columns([3, 2])
    with left:
        show.plot(show.figure(V.reach_band, r, query, tokens), "receptive_field", key="eff_band_fig")
        st.caption(f"{sparsity.TITLES[focus]}: token {query} reads {int(r[0][query].sum())} token(s) after one layer "
                   f"and {int(r[-1][query].sum())} of {n} after {layers}; "
                   + (f"every token reaches every token after {full} layer(s)." if full else
                      f"on average a token reaches {r[-1].mean():.0%} of the tokens after {layers}."))
    with right:
        show.plot(show.figure(V.coverage, {k: [float(x.mean()) for x in E.reach(m, layers)] for k, m in masks.items()},
                             sparsity.SHORT), "receptive_coverage")
        show.explain("Stack layers and the reach compounds: token i reads keys j, which read their keys a layer "
                     "before. A window w reaches L·w tokens after L layers; one global token joins all in two.",
                     r"R^{(L)} = \mathbb{1}\left[M^{L} > 0\right],\quad R^{(L)}_{ij}=1 \iff j \rightsquigarrow i",
                     "reach = receptive_field(mask, layers)  # set unions of bit rows, layer by layer")
    return focus


def on_model(sel: state.Selection, cfg: E.Settings, focus: str, n: int) -> None:
    """The chosen pattern laid on the sidebar's model for one call, against the model dense."""
    st.header(f"{sparsity.TITLES[focus]} on the real model")
    if E.family(sel.model, sel.device, sel.dtype) is None:
        family.switch("Patterns are laid on BERT-layout encoders (MiniLM, or an hf: BERT, RoBERTa or ELECTRA) and on "
                      "the tiny decoder: pick one in the sidebar.", ["bert", "tiny"], "eff_sparse")
        return
    try:
        eff = E.effect(sel.model, sel.device, sel.dtype, sel.text, sel.text_b, focus, cfg)
    except UserError as err:
        st.error(str(err))
        return
    m = st.columns(4)
    m[0].metric("output cosine vs dense", f"{eff.output_cosine:.4f}", help=f"Compares the {eff.what}.")
    m[1].metric("top-1 agreement", "—" if eff.top1 is None else f"{eff.top1:.0%}")
    m[2].metric("pairs kept", f"{eff.mask.sum():,} of {eff.mask.size:,}")
    if eff.sentence_cosine is not None:
        m[3].metric("sentence embedding cosine", f"{eff.sentence_cosine:.4f}",
                    help="The mean of the final hidden states over tokens: the sentence embedding MiniLM is made for.")
    if eff.answer:
        st.markdown(f"Sorting answer, dense: `{eff.answer[0]}` · with the pattern: `{eff.answer[1]}`")
    st.caption(f"Compared: {eff.what}.")
    left, right = st.columns([3, 2])
    with left:
        show.plot(show.figure(V.layer_effect, eff.dropped_mass, eff.argmax_agree, eff.layer_cosine), "sparse_layers")
    with right:
        show.explain(
            "The pattern is added to this call's attention scores: 0 where a pair is kept, the most negative float "
            "where it is not, so softmax gives dropped pairs exactly 0 and the kept ones share all the weight. The "
            "model was trained dense, so what it loses shows how much it relied on the pairs a pattern drops.",
            r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt d} + M\right),\quad M_{ij}=\begin{cases}0 & "
            r"\text{kept}\\ -\infty & \text{dropped}\end{cases}",
            "model(**inputs, attention_mask=additive_mask(mask))  # (1, 1, T, T), this call only")
    c = st.columns(4)
    E.keep_index("eff_layer", eff.dense.shape[0])
    E.keep_index("eff_head", eff.dense.shape[1])
    layer = c[0].selectbox("layer", range(eff.dense.shape[0]), key="eff_layer", format_func="L{}".format, **E.BIND)
    head = c[1].selectbox("head", range(eff.dense.shape[1]), key="eff_head", format_func="H{}".format, **E.BIND)
    show.plot(show.figure(V.attention_pair, eff.dense[layer, head, :128, :128], eff.sparse[layer, head, :128, :128],
                               eff.tokens[:128], f"L{layer} H{head}" + (" (first 128 tokens)" if n > 128 else "")),
              "sparse_head")


st.title("Sparse attention")
sel = state.selection()
show.explain(
    "Dense attention scores every query against every key: n² pairs. A sparse pattern keeps a chosen few, so the "
    "cost grows like n·k for k keys per query. Information still travels: each layer lets a token read what its "
    "keys read the layer before, so the receptive field widens with depth.",
    r"\mathrm{Attn}(Q,K,V)_i=\sum_{j\,:\,M_{ij}=1}\frac{e^{q_i\cdot k_j/\sqrt d}}{\sum_{j'\,:\,M_{ij'}=1}"
    r"e^{q_i\cdot k_{j'}/\sqrt d}}\,v_j",
    "out = sparse_attention(q, k, v, mask)  # gathers only the key blocks mask keeps: (B, H, T, K*block) scores",
)
tr = show.current_trace(sel)
if tr is not None and "encoder" in tr.parts:  # an encoder-decoder: patterns are drawn over its self-attention
    tr = tr.parts["encoder"]
if tr is not None:
    settings, masks = patterns(sel, len(tr.tokens), tr.kind == "causal")
    if masks:
        on_model(sel, settings, reach(tr.tokens, masks), len(tr.tokens))
st.header("What it costs, measured")
E.cost_section(("dense", "sliding_window", "block_sparse"), "cuda" if sel.device.startswith("cuda") else "cpu",
               key="eff_scost")
