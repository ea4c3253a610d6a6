"""Circuits: which edges between the embedding, heads, MLPs and logits carry a task, and how much of it they keep."""
import numpy as np
import pandas as pd
import streamlit as st

import limits
from data.circuit_tasks import BUILT_IN, from_csv
from experiments import circuits, patching
from ui import cache, family, work
from ui import patching as patch_ui
from ui.show import explain, plot
from ui.state import selection
from viz.circuits import check_figure, curve_figure, graph_figure

B = dict(bind="query-params", persist_state="session")
JOB = "circuits"
COUNTS = (1, 2, 5, 10, 20, 50, 100, 200, 500)  # edges kept along the faithfulness curve (with 0, top and all)
CHECKED = 20  # top edges patched one at a time against EAP's estimate
TASKS = ("Built-in task", "The Patching view's pair", "Pairs from a CSV file")


def task_pairs(task: str, model_key: str, model, n: int) -> list[tuple]:
    """The pairs of the chosen task, or ValueError with one sentence."""
    if task == TASKS[0]:
        if model_key not in BUILT_IN:
            raise ValueError("Built-in tasks are for 'gpt' (brackets), 'induction' (repeated syllables) and 'tiny' "
                             "(sorting digits): pick one of those, the Patching view's pair, or a CSV file.")
        return BUILT_IN[model_key][0](n)
    if task == TASKS[1]:
        pair = patch_ui.pair_for(model_key, model)
        return [tuple(st.session_state.get(k) or v for k, v in zip(patch_ui.KEYS, (pair.clean, pair.corrupt,
                                                                                   pair.answer, pair.wrong)))]
    up = st.file_uploader("Pairs (CSV with columns clean, corrupt, answer, wrong)", type=["csv"], key="circ_csv")
    if up is None:
        raise ValueError("Upload a CSV file of pairs with the columns clean, corrupt, answer, wrong.")
    return from_csv(up.getvalue(), n, limits.current().pruning_upload_bytes)


def run(progress, model, key, pairs, method, steps, top, ablation):
    """The job: edge scores, the faithfulness curve and the top edges patched, kept under `key` once done."""
    def compute():  # on the job's thread: no Streamlit here
        E = circuits.edge_scores(model, pairs, method, steps, progress=lambda f: progress(0.5 * f, "every edge…"))
        ranked = E.iloc[E.score.abs().argsort(kind="stable")[::-1]].reset_index(drop=True)
        counts = sorted({0, min(top, len(E)), len(E)} | {k for k in COUNTS if k < len(E)})
        curve = circuits.faithfulness_curve(model, pairs, ranked, counts, ablation,
                                            progress=lambda f: progress(0.5 + 0.3 * f, "faithfulness…"))
        exact = circuits.edge_scores(model, pairs, "patching", edges=ranked.head(CHECKED),
                                     progress=lambda f: progress(0.8 + 0.2 * f, "patching the top edges…"))
        return ranked, counts, curve, exact.score.to_numpy()
    return cache.kept(key, compute)


st.title("Circuits")
st.caption("Patching moves one head at a time; a circuit is made of edges: which head reads which earlier head's "
           "output, through its query, key or value. EAP scores every edge at once from two runs and one gradient; "
           "the strongest edges are the circuit, and running the model with only them clean says how much of the "
           "task they carry.")
if (model := family.loaded(sel := selection())) is None:
    st.stop()
try:
    circuits.check(model)
except ValueError as err:
    family.switch(str(err), ["gpt", "induction"], "circ")
    st.stop()
c1, c2, c3 = st.columns([3, 2, 2])
task = c1.radio("Task", TASKS, index=0 if sel.model in BUILT_IN else 1, key="circ_task", **B)
n = c2.number_input("Pairs", 1, 64, 4, key="circ_pairs", **B, help="How many pairs of the task to average over.")
top = c3.number_input("Edges in the circuit", 1, 500, 20, key="circ_top", **B)
c1, c2, c3 = st.columns([3, 2, 2])
method = c1.radio("Method", ["EAP", "EAP-IG"], key="circ_method", horizontal=True, **B,
                  help="EAP-IG averages the gradient over runs from the corrupted to the clean text (Hanna et al.).")
steps = c2.number_input("EAP-IG steps", 1, 100, 5, key="circ_steps", **B, disabled=method == "EAP")
ablation = c3.radio("Ablation of the other edges", ["corrupt", "mean"], key="circ_ablation", horizontal=True, **B)
st.caption("Faithfulness changes with the ablation (Miller et al. 2024): edges outside the circuit read the "
           "corrupted run of the same pair, or the mean of every pair's corrupted run.")
try:
    pairs = task_pairs(task, sel.model, model, int(n))
    circuits.check(model, pairs)
except ValueError as err:
    st.error(str(err))
    st.stop()
st.caption(f"{len(pairs)} pair(s); the first: {pairs[0]}" + (f". The task: {BUILT_IN[sel.model][1]}."
                                                              if task == TASKS[0] else "."))
m = method.lower()
# per pair: the scores (a backward counts 2), the top edges patched (2 + CHECKED), the curve (2 + its counts)
passes = len(pairs) * (((2 + 3 * int(steps)) if m == "eap-ig" else 5) + 2 + CHECKED + 2 + len(COUNTS) + 3)
if not work.offer(work.Budget(passes, limits.current().pruning_forward_passes, "forward passes (a backward "
                              "counts 2)", "use fewer pairs or EAP-IG steps")):
    st.stop()
key = ("circuits", sel.model, sel.device, sel.dtype, tuple(pairs), m, int(steps) if m == "eap-ig" else 0, int(top),
       ablation)
found, res = cache.STORES["results"].peek(key)
if not found:
    if st.session_state.get("circ_run") != key:
        st.session_state["circ_run"] = key
        work.start(JOB, run, model, key, pairs, m, int(steps), int(top), ablation)
    if (res := work.follow(JOB, "Finding the circuit:")) is None:
        st.stop()
ranked, counts, curve, exact = res
shown = ranked.head(int(top)).assign(score=lambda d: d.score.round(4))

st.header("The circuit")
plot(graph_figure(shown, list(dict.fromkeys(ranked.sender)) + ["logits"]), "circuits-graph", table=shown,
     alt=f"The circuit as a layered graph: {len(shown)} of {len(ranked)} edges, from the embedding through each "
         f"layer's heads{' and MLP' * bool(ranked.sender.str.endswith('.mlp').any())} to the logits; the strongest is "
         f"{shown.sender[0]} → {shown.receiver[0]} ({shown.score[0]:+.3f}).")
st.caption(f"Score: {method}'s estimate of how the logit difference answer − wrong changes when that one edge reads "
           "the corrupted run. Dashed vermillion: patching it lowers the metric, so the edge carries the answer.")
heads = sorted({n.split(".")[0] for n in [*shown.sender, *shown.receiver] if "H" in n}, key=lambda n: n[1:])
if heads and (sel.model in patch_ui.INSIDE or family.family(model) == "decoder"):
    c1, c2 = st.columns([2, 3], vertical_alignment="bottom")
    name = c1.selectbox("A head of the circuit", heads, key="circ_head")
    layer, head = (int(v) for v in name[1:].split("H"))
    c2.button(f"Open {name} in Inside a head", key="circ_open", icon="🧮", on_click=patch_ui.open_inside,
              args=(sel.model, layer, head, pairs[0][0]), help="On the first pair's clean text.")

st.header("Faithfulness")
area = float(np.trapezoid(curve, np.asarray(counts) / counts[-1]))
at_top = curve[counts.index(min(int(top), len(ranked)))]
plot(curve_figure(counts, curve, int(top), area), "circuits-faithfulness",
     table=pd.DataFrame({"edges kept": counts, "faithfulness": np.round(curve, 4)}),
     alt=f"Faithfulness against edges kept, from {curve[0]:.2f} with none to 1.00 with all {counts[-1]}; the top "
         f"{top} keep {at_top:.2f}; area under the curve {area:.2f}.")
st.markdown(f"With its top **{top}** edges clean, the model keeps **{at_top:.2f}** of its logit difference "
            f"({ablation} ablation); area under the curve **{area:.2f}** (edges kept as a fraction of all).")

st.header("EAP against exact patching")
est = ranked.head(CHECKED).score.round(4).tolist()
labels = [f"{s} → {r}" for s, r in zip(ranked.sender, ranked.receiver)][:CHECKED]
rho = patching.rank_correlation(np.asarray(est), exact) if len(est) > 2 else float("nan")
plot(check_figure(est, np.round(exact, 4).tolist(), labels, rho), "circuits-check",
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
