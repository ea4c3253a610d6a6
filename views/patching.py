"""Patching: which heads, and which positions of the residual stream, carry a behaviour, measured causally."""
from functools import partial

import numpy as np
import streamlit as st

from experiments import patching
from limits.errors import UserError
from ui import family
from ui import patching as ui
from ui.runtime import work
from ui.show import explain, head_picker, notices, plot
from ui.state import selection
from viz.patching import heads_figure, positions_figure, versus_figure

B = dict(bind="query-params", persist_state="session")

st.title("Patching")
st.caption("Attention maps and gradients are correlations. Patching is an experiment: run a clean text and a "
           "corrupted one, copy one head's output (or one position of the residual stream) from the clean run into "
           "the corrupted run, and see how much of the clean answer comes back.")
sel = selection()
model = family.loaded(sel)
if model is None:
    st.stop()
try:
    patching.check(model)
except UserError as err:
    family.switch(str(err), ["gpt", "tiny"], "patch")
    st.stop()
notices(model)  # a hybrid's: which of its layers the rows are
pair = ui.pair_for(sel.model, model)
ui.put_example(pair)
c1, c2 = st.columns(2)
clean = c1.text_input("Clean text", key="patch_clean", **B, help="The text on which the model gives the answer.")
corrupt = c2.text_input("Corrupted text", key="patch_corrupt", **B,
                        help="The same number of tokens, with a word or two changed so that the answer changes.")
c1, c2, c3 = st.columns([2, 2, 3], vertical_alignment="bottom")
answer = c1.text_input("Answer token", key="patch_answer", **B, help="One token; mind its leading space.")
wrong = c2.text_input("Wrong answer token", key="patch_wrong", **B, help="The token the corrupted text favours.")
on_example = (clean, corrupt, answer, wrong) == (pair.clean, pair.corrupt, pair.answer, pair.wrong)
c3.button("Use the example for this model", key="patch_example", on_click=ui.use_pair, args=(pair,),
          disabled=on_example, help=f"“{pair.clean}” / “{pair.corrupt}”: {pair.why}."
          + (" The boxes hold it." if on_example else ""))
try:  # the texts or tokens cannot be used: one sentence, before anything runs
    budget = ui.budget(model, clean)
    found = work.offer(budget) and ui.results(model, sel.model, (clean, corrupt, answer, wrong), budget.cost)
except UserError as err:
    if on_example:
        st.info(f"The example pair does not fit this model: {err} Type a pair of your own.")
    else:
        st.error(str(err))
    st.stop()
if not found:  # over the budget, or still running: work and ui.results said so
    st.stop()
heads, resid, grads = found
c_diff, k_diff = patching.shown(heads.clean_diff, heads.corrupt_diff)
st.markdown(f"**{heads.metric.capitalize()}**, logit({answer!r}) − logit({wrong!r}): "
            f"clean **{c_diff}**, corrupted **{k_diff}**. A cell's value is the fraction of that gap it restores.")
for note in patching.gap_warnings(heads, answer, wrong, example=on_example):
    st.warning(note)

clicks = st.session_state.get("_patch_clicks", 0)  # a fresh chart key per click: no selection left behind
why = ui.inside_refusal(sel.model, model)  # None where Inside a head opens this model's heads
can_open = why is None
pick = dict(on_select=partial(ui.picked, sel.model, clean, heads.scores)) if can_open else dict(on_select="ignore")
left, right = st.columns([2, 3])
with left:
    plot(heads_figure(heads.scores, heads.rows, heads.metric), "patching-heads", key=f"patch_heads_{clicks}",
         table=True, selection_mode="points", **pick)
with right:
    plot(positions_figure(resid.scores, resid.rows, resid.tokens, resid.corrupt_tokens), "patching-positions",
         key=f"patch_pos_{clicks}", selection_mode="points", **pick)
best = np.unravel_index(np.nanargmax(heads.scores), heads.scores.shape)
st.caption(f"Most restoring head: {ui.head_name(heads.rows, *best)} ({heads.scores[best]:+.2f}). "
           + ("Click a cell, or pick a head in the boxes, to look inside it (a position: the layer's most restoring "
              "head) on the clean text." if can_open else f"Cells here open nothing. {ui.inside_note(why)}"))
if can_open:
    layer, head = head_picker(*heads.scores.shape, (int(best[0]), int(best[1])), "patch_pick",
                              layer_name=lambda i: ui.head_name(heads.rows, i))
    ui.inside_button(st, why, f"Open {ui.head_name(heads.rows, layer, head)} in Inside a head", key="patch_open_best",
                     on_click=ui.open_inside, args=(sel.model, layer, head, clean))

rho = patching.rank_correlation(np.abs(heads.scores), grads)
with st.expander(f"Patching beside gradient importance (Spearman ρ = {rho:.2f})"):
    st.caption("Gradient importance (Michel et al. 2019, as the Pruning view scores heads) for this same logit "
               "difference on the clean text: |∂d/∂ξ_h| with every head's gate ξ at 1. It is a local slope, while "
               "patching makes a whole change; ρ is their rank correlation over the heads (|patching score|).")
    plot(versus_figure(heads.scores, grads, heads.rows), "patching-vs-gradient")

explain(
    "Activation patching (Meng et al. 2022; Wang et al. 2023) asks what a component does for *this* behaviour. "
    "Run the clean and the corrupted text, keep every head's output from the clean run, then run the corrupted "
    "text again with one head's output (at every position) replaced by its clean value. If the answer comes back, "
    "that head carries the information that differs between the texts. The right map does the same for the whole "
    "residual stream entering a layer at one position: where the information sits, layer by layer. One component "
    "at a time: two heads that each restore little may restore much together.",
    r"\mathrm{score} = \frac{d_\mathrm{patched} - d_\mathrm{corrupt}}{d_\mathrm{clean} - d_\mathrm{corrupt}},\quad "
    r"d = \mathrm{logit}(\text{answer}) - \mathrm{logit}(\text{wrong})"
    r"\ \text{(at the last token, the mask, or of the class)}",
    "heads = o_proj_input.view(B, T, H, hs)          # a pre-hook on the attention output projection\n"
    "heads[:, :, h] = clean_heads[:, :, h]            # one head, every position, from the clean run\n"
    "score = (d(corrupt_run) - d_corrupt) / (d_clean - d_corrupt)",
)
