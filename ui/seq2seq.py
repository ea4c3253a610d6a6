"""The seq2seq view's transformer tab: the same date through a transformer encoder-decoder, its
cross-attention beside the Bahdanau alignment, and beam search with every hypothesis's score and alignment.
Only its widgets are here (its rows and table are experiments.seq2seq's): folded into views/seq2seq.py, the page's
three tabs would take ~175 lines against the ~150 a view may have, even with its explanations moved out.

The model is the sidebar's model when that is an encoder-decoder (T5, BART, Marian), else the built-in
'seq2seq-transformer' when it is present; a caption says which. Decoding is models.beam.search (the one beam
search, shared with the GRU models); width 1 is greedy. Alignments are the model's own cross-attention rows
that chose each written token.
"""
from __future__ import annotations

import streamlit as st

from experiments import seq2seq as E
from limits.errors import UserError
from models import available
from models.seq2seq import Decoded
from ui import family, show
from ui.family import BIND
from ui.runtime import cache
from ui.state import selection
from viz.common import escape
from viz.seq2seq import alignment

MEAN = -1  # the Head box's first choice: the mean over the layer's heads


@cache.memo("results", spinner="Beam search…")
def hypotheses(name: str, device: str, dtype: str, text: str, width: int) -> list:
    return cache.model(name, device, dtype).hypotheses(text, width)


def _model(sel) -> str | None:
    """The sidebar's model when it is an encoder-decoder (T5, BART, Marian), else the built-in date transformer;
    a caption says which one is shown and why."""
    model = family.loaded(sel)
    if model is not None and family.family(model) == "encoder-decoder":
        st.caption("The sidebar's model is an encoder-decoder: it reads the date above, and it is what is shown here.")
        return sel.model
    if "seq2seq-transformer" in available():
        st.caption("The sidebar's model is not an encoder-decoder, so this is the built-in transformer date model; "
                   "pick a T5, BART or Marian folder with 'Other model' in the sidebar to see yours here.")
        return "seq2seq-transformer"
    st.info("The built-in transformer date model ('seq2seq-transformer') is not in this copy of the app: pick a "
            "T5, BART or Marian folder with 'Other model' in the sidebar to see a transformer here.")
    return None


def _title(output: list[str], after: str = "") -> str:
    """A figure's title from what a decoder wrote, its tokens joined, cut to 60 characters with their count after
    (an untrained model writes dozens of <pad>, which would run off the figure)."""
    text = "".join(output)
    text = text if len(text) <= 60 else f"{text[:57]}… ({len(output)} tokens)"
    return escape(text + after)


def section(text: str, width: int, bahdanau: Decoded | None) -> None:
    st.header("The same date through a transformer")
    sel = selection()
    name = _model(sel)
    if name is None:
        return
    model = cache.model(name, sel.device, sel.dtype)
    st.caption(f"{model.label}. Its cross-attention: queries from the decoder, keys and values from the encoder, "
               "one weight per (written token, input token) pair in every head: O(T·S·d) work.")
    try:
        greedy, beams = hypotheses(name, sel.device, sel.dtype, text, 1)[0], \
            hypotheses(name, sel.device, sel.dtype, text, width)
    except UserError as err:
        st.error(str(err))
        return
    n_layers, n_heads = greedy.trace.n_layers, greedy.trace.n_heads
    c = st.columns(2)
    layer = int(c[0].selectbox("Layer", range(n_layers), n_layers - 1, key="s2s_tf_layer",
                               format_func=lambda i: f"L{i}", **BIND))
    head = c[1].selectbox("Head", [MEAN, *range(n_heads)], key="s2s_tf_head", **BIND,  # not None: that is a
                          format_func=lambda h: "mean of the heads" if h == MEAN else f"H{h}")  # box with no choice
    head = None if head == MEAN else head
    who = f"L{layer} " + ("mean of heads" if head is None else f"H{head}")
    left, right = st.columns(2)
    with left:
        st.header("Bahdanau GRU")
        if bahdanau is not None and bahdanau.output:
            show.plot(alignment(bahdanau.source, bahdanau.output, bahdanau.weights,
                                title=_title(bahdanau.output)), "seq2seq-bahdanau", key="s2s_tf_bahdanau")
    with right:
        st.header(f"Transformer · {who}")
        if greedy.output:
            show.plot(alignment(greedy.source, greedy.output, E.cross_rows(greedy, layer, head),
                                title=_title(greedy.output)), "seq2seq-transformer", key="s2s_tf_greedy")
    st.header(f"Greedy against beam search of width {width}")
    st.dataframe(E.hypotheses_table(greedy, beams), hide_index=True)
    st.caption("Hypotheses are ranked by their summed log-probability (no length normalisation); width 1 is greedy. "
               "A wider beam keeps more partial outputs alive; its best is the likeliest it found, which need not be "
               "the right date.")
    for i, (tab, h) in enumerate(zip(st.tabs([f"beam {i + 1}" for i in range(len(beams))]), beams)):
        with tab:
            if h.output:
                show.plot(alignment(h.source, h.output, E.cross_rows(h, layer, head),
                                    title=_title(h.output, f" · log p = {h.score:.3f}")),
                          f"seq2seq-beam-{i + 1}", key=f"s2s_tf_beam_{i}")
