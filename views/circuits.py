"""Circuits: which edges between the embedding, heads, MLPs and logits carry a task, and how much of it they keep."""
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

import limits
from experiments import circuits, patching
from experiments import circuits_task as T
from limits.errors import UserError
from ui import circuits as U
from ui import family
from ui.runtime import cache, heavy, work
from ui.show import explain, notices, plot
from ui.state import selection
from viz.circuits import check_figure, curve_figure, graph_figure, heads_in

B = dict(bind="query-params", persist_state="session")
JOB = "circuits"
COUNTS = (1, 2, 5, 10, 20, 50, 100, 200, 500)  # edges kept along the faithfulness curve, with 0, all and the circuit's
CHECKED = 20  # top edges patched one at a time against EAP's estimate
DRAWN = 500  # edges the graph draws at most (a low threshold may keep thousands; the table has them all)


def run(progress, model, pairs, method, steps, ablation):
    """The job (on its thread: no Streamlit here): edge scores, the faithfulness curve and the top edges patched."""
    E = circuits.edge_scores(model, pairs, method, steps, progress=lambda f: progress(0.5 * f, "every edge…"))
    ranked = E.iloc[E.score.abs().argsort(kind="stable")[::-1]].reset_index(drop=True)
    counts = sorted({0, len(E)} | {k for k in COUNTS if k < len(E)})
    curve = circuits.faithfulness_curve(model, pairs, ranked, counts, ablation,
                                        progress=lambda f: progress(0.5 + 0.3 * f, "faithfulness…"))
    exact = circuits.edge_scores(model, pairs, "patching", edges=ranked.head(CHECKED),
                                 progress=lambda f: progress(0.8 + 0.2 * f, "patching the top edges…"))
    return ranked, counts, curve, exact.score.to_numpy()


st.title("Circuits")
st.caption("Patching moves one head at a time; a circuit is made of edges: which head reads which earlier head's "
           "output, through its query, key or value. EAP scores every edge at once from two runs and one gradient; "
           "the strongest edges are the circuit, and running the model with only them clean says how much of the "
           "task they carry.")
if (model := family.loaded(sel := selection())) is None:
    st.stop()
notices(model)  # e.g. a model of text and images: only its language model is read
try:
    with st.spinner("Checking that the pieces circuits run rebuild the model's logits…"):  # by-shape layouts only
        circuits.check(model, encoder_decoders=True)
except UserError as err:
    family.switch(str(err), ["gpt", "induction", "seq2seq-transformer"], "circ")
    st.stop()
offered = T.offered(sel.model, model)
c1, c2 = st.columns([3, 4])
task = c1.radio("Task", offered, key="circ_task", **B)
if task == T.PATCHING:  # always one pair: a box here would show a count this task cannot have
    n = 1
    c2.caption("Pairs: **1**, the Patching view's pair. For more pairs of your own, upload a CSV file.")
else:
    n = c2.number_input("Pairs", 1, 64, 4, key="circ_pairs", **B,
                        help="How many pairs of the task to average over.")
c1, c2, c3 = st.columns([3, 2, 2])
method = c1.radio("Method", ["EAP", "EAP-IG"], key="circ_method", horizontal=True, **B,
                  help="EAP-IG averages the gradient over runs from the corrupted to the clean text (Hanna et al.).")
steps = c2.number_input("EAP-IG steps", 1, 100, 5, key="circ_steps", **B, disabled=method == "EAP")
ablation = c3.radio("Ablation of the other edges", ["corrupt", "mean"], key="circ_ablation", horizontal=True, **B)
by, top, threshold = U.keep_control()
st.caption("Faithfulness changes with the ablation (Miller et al. 2024): edges outside the circuit read the "
           "corrupted run of the same pair, or the mean of every pair's corrupted run.")
try:
    pairs = U.task_pairs(task, sel.model, model, int(n))
    circuits.check(model, pairs, encoder_decoders=True)
except UserError as err:  # their own file: an error; the page's own pairs: what fits is for the visitor to write
    if task == T.CSV:
        st.error(str(err))
    else:
        st.info(f"This task's pairs do not fit this model: {err} Upload pairs of your own (a CSV file) that fit it.")
    st.stop()
encdec = family.family(model) == "encoder-decoder"
st.caption(f"{T.counted(task, int(n), len(pairs))}; the first: {U.said(pairs[0])}." + T.described(task, sel.model)
           + (" An encoder-decoder: each pair is two sources, the metric is read at the first token written (the "
              "decoder reads its start token only, so dec.embed scores 0), and cross-attention's k and v read the "
              "encoder's last output." if encdec else ""))
m = method.lower()
# per pair: the scores (a backward counts 2), the top edges patched (2 + CHECKED), the curve (2 + its counts), the
# chosen circuit's faithfulness (3)
passes = len(pairs) * (((2 + 3 * int(steps)) if m == "eap-ig" else 5) + 2 + CHECKED + 2 + len(COUNTS) + 2 + 3)
key = ("circuits", sel.model, sel.device, sel.dtype, tuple(pairs), m, int(steps) if m == "eap-ig" else 0, ablation)
budget = work.Budget(passes, limits.current().pruning_forward_passes, "forward passes (a backward counts 2)",
                     "use fewer pairs or EAP-IG steps")
if (res := heavy.run(JOB, key, "Finding the circuit:", run, model, pairs, m, int(steps), ablation,
                     budget=budget)) is None:
    st.stop()
ranked, counts, curve, exact = res
k = U.kept(ranked, by, top, threshold)
if k not in counts:  # the chosen circuit measured too, and put on the curve
    f_k = cache.kept(key + (k,), lambda: circuits.faithfulness(model, pairs, ranked.head(k), ablation))
    counts, curve = zip(*sorted([*zip(counts, curve), (k, f_k)]))
    counts, curve = list(counts), list(curve)
shown = ranked.head(k).assign(score=lambda d: d.score.round(4))
drawn = shown.head(DRAWN)
rule = f"top **{k}** edges" if by == U.COUNT else f"**{k}** edges whose |score| ≥ {threshold:g}"

st.header("The circuit")
names = list(dict.fromkeys(ranked.sender)) + ["logits"]
stacks = ("encoder's embedding through its layers, then the decoder's self-attention, cross-attention and MLP" if encdec
          else f"embedding through each layer's heads{' and MLP' * bool(ranked.sender.str.endswith('.mlp').any())}")
plot(graph_figure(drawn, names), "circuits-graph", table=shown, key=U.chart_key(),
     on_select=partial(U.picked, U.chart_key()), selection_mode="points",
     alt=f"The circuit as a layered graph: {len(drawn)} of {len(ranked)} edges, from the {stacks} to the logits"
         + (f"; the strongest is {shown.sender[0]} → {shown.receiver[0]} ({shown.score[0]:+.3f})." if k else "."))
st.caption(f"Score: {method}'s estimate of how the logit difference answer − wrong changes when that one edge reads "
           "the corrupted run. Dashed vermillion: patching it lowers the metric, so the edge carries the answer."
           + (f" The graph draws the strongest {DRAWN}; the table has all {k}." if k > DRAWN else "")
           + " Click a head's node to pick it below.")
U.head_boxes(sel.model, model, heads_in([*shown.sender, *shown.receiver]), heads_in(names), pairs[0][0])

st.header("Faithfulness")
area = float(np.trapezoid(curve, np.asarray(counts) / counts[-1]))
at_top = curve[counts.index(k)]
plot(curve_figure(counts, curve, k, area), "circuits-faithfulness",
     table=pd.DataFrame({"edges kept": counts, "faithfulness": np.round(curve, 4)}),
     alt=f"Faithfulness against edges kept, from {curve[0]:.2f} with none to 1.00 with all {counts[-1]}; the "
         f"circuit's {k} keep {at_top:.2f}; area under the curve {area:.2f}.")
st.markdown(f"With its {rule} clean, the model keeps **{at_top:.2f}** of its logit difference "
            f"({ablation} ablation); area under the curve **{area:.2f}** (edges kept as a fraction of all).")
U.faithfulness_notes(curve, ablation, len(pairs), k, ranked, by, threshold)

st.header(f"{method} against exact patching")
est = ranked.head(CHECKED).score.round(4).tolist()
labels = [f"{s} → {r}" for s, r in zip(ranked.sender, ranked.receiver)][:CHECKED]
rho = patching.rank_correlation(np.asarray(est), exact) if len(est) > 2 else float("nan")
plot(check_figure(est, np.round(exact, 4).tolist(), labels, rho, method), "circuits-check",
     table=pd.DataFrame({"edge": labels, method: est, "patched": np.round(exact, 4)}),
     alt=f"{method}'s estimate against the exact effect of patching each of the top {len(est)} edges alone; "
         f"Spearman rank correlation {rho:.2f}.")

explain(
    "Each receiver (a head's query, key or value input, an MLP, the logits) reads its own copy of the residual "
    "stream: the sum of the writes of every sender before it. Patching an edge means one receiver reads one "
    "sender's write from the corrupted run. EAP (Syed et al. 2024) estimates every edge's effect at once with a "
    "first-order Taylor step; EAP-IG (Hanna et al. 2024) integrates the gradient from the corrupted to the clean "
    "input. The circuit's faithfulness is measured, not estimated: the model run with only its edges clean.",
    r"\mathrm{score}(s \to r) = \big(z_s^{\mathrm{corrupt}} - z_s^{\mathrm{clean}}\big)\cdot"
    r"\frac{\partial d}{\partial x_r},\quad d = \mathrm{logit}(\text{answer}) - \mathrm{logit}(\text{wrong})",
    "E = edge_scores(model, pairs, method='eap')               # sender, receiver, score\n"
    "top = E.loc[E.score.abs().nlargest(20).index]\n"
    "faithfulness(model, pairs, top, ablation='corrupt')     # api.circuit(model, pairs, top=20)",
)
