"""Pruning: which heads matter, what removing them costs, and the pruned model to take away.

The heads are judged by a built-in example task (the paraphrase task for MiniLM, sorting for the tiny decoder,
masked-LM on the sidebar text for an encoder with that head) or by your own model's head on your labelled
rows (ui.prune_own). Either way the page names the task, the metric, its value with every head and chance.
"""
import json
from collections import Counter

import streamlit as st

from experiments import importance as imp
from experiments import prune_tasks as tasks
from experiments.encdec_task import stack_names
from experiments.pruning import in_original_numbers
from limits.errors import UserError
from models import gates
from ui import family, prune_own, pruning_circuit, pruning_patching
from ui.corpus import redundancy_hints
from ui.pruning import B, count_slider, gated_section, metric, real_pruning_section
from ui.runtime import cache, heavy
from ui.show import explain, figure, notices, plot
from ui.state import selection
from viz.pruning import curve, importance_grid

CHOICES = ["bert", "tiny", "gpt"]


def builtin(sel) -> None:
    if sel.model not in CHOICES and not sel.model.startswith("hf:"):
        family.switch(tasks.no_task(), CHOICES, "prune")
        return
    try:
        m = cache.model(sel.model, sel.device, sel.dtype)
        kind = family.family(m)
        bert_layout = kind != "encoder" or tasks.bert_like(m)
        if kind not in ("encoder", "tiny", "decoder", "encoder-decoder") or not bert_layout:
            family.switch(tasks.no_task(m), CHOICES, "prune")
            return
        try:
            gates.head_counts(m)  # a layout head gates cannot reach (OPT, say): its sentence and the switch
        except UserError as err:
            family.switch(str(err), CHOICES, "prune")
            return
        task = tasks.for_model(m, sel.text, sel.model)
    except UserError as err:
        st.error(str(err))
        return
    notices(m)  # a hybrid's: which of its own layers L0, L1, ... are
    key = (sel.model, sel.device, sel.dtype, sel.text if task.uses_text else "")
    c1, c2, c3 = st.columns(3)
    if task.items:
        n_score = count_slider(c1, f"{task.items.capitalize()} that score importance", task.score_range, "prune_score")
        n_eval = count_slider(c2, f"Held-out {task.items} for the metric", task.eval_range, "prune_eval")
    else:
        n_score = n_eval = 0
        c1.caption(f"Importance and metric from {task.name}: {task.about(0)}. Change the sidebar text to change them.")
    colour = c3.radio("Colour by", ["gradient importance", "confidence (loss-free)"], key="prune_colour", **B)
    grad, conf, labels = heavy.run("prune_scores", ("prune-scores", key, n_score), f"Scoring heads on {task.name}…",
                                   lambda progress: task.score(n_score, progress), thread=False)
    place, by_position, grad, conf = in_original_numbers(task.net, grad, conf)  # a pruned export: its original numbers
    n_heads = len(place)
    shown = grad if colour.startswith("gradient") else conf
    patterns = Counter(label for row in labels for label in row)
    examples = "digit strings" if task.items == "strings" else "sentences"
    st.caption(f"Patterns over 24 built-in {examples} (Clark et al. 2019; hover a head): "
               + ", ".join(f"{n} {label}" for label, n in patterns.most_common()) + ".")
    names = [f"L{l} H{h}" for l, h in sorted(place)]
    if kind == "encoder-decoder":  # one row per attention layer of each stack (models.sites order)
        st.caption("Rows: " + ", ".join(f"L{i} = {n}" for i, n in enumerate(stack_names(m))) + ".")
    hints = redundancy_hints(sel)
    if hints and hints[0]:
        st.caption(f"Heads that attend alike over {hints[1]:,} built-in sentences (Heads across a corpus, "
                   "Jensen-Shannon distance under 0.3), candidates to keep one of: "
                   + ", ".join(f"{p['head']} ≈ {p['twin']}" for p in hints[0][:8]) + ".")

    st.session_state["prune_off"] = [n for n in st.session_state.get("prune_off", []) if n in names]  # new model
    clicks = st.session_state.get("prune_clicks", 0)
    event = st.session_state.get(f"prune_grid_{clicks}")
    points = event["selection"]["points"] if event else []
    if points:  # a click toggles that head; a fresh chart key clears the selection for the next click
        name = f"L{int(points[0]['y'])} H{int(points[0]['x'])}"
        now = list(st.session_state.get("prune_off", []))
        st.session_state["prune_off"] = [n for n in now if n != name] if name in now else now + [name]
        st.session_state["prune_clicks"] = clicks = clicks + 1
    off_names = st.multiselect("Heads switched off (click a square to toggle)", names, key="prune_off", **B)
    off = {(int(n.split()[0][1:]), int(n.split()[1][1:])) for n in off_names}
    plan_json = json.dumps(imp.plan_of(sorted(place[h] for h in off)), sort_keys=True)  # the model as it is now

    left, right = st.columns([3, 1])
    with left:
        plot(figure(importance_grid, shown, labels, frozenset(off), colour.split(" (")[0]), "head-importance",
             key=f"prune_grid_{clicks}", on_select="rerun", selection_mode="points")
        st.caption(imp.measures_note(grad))
    with right:
        full, now = metric(key, n_eval, "{}"), metric(key, n_eval, plan_json)
        same = abs(now - full) < 5e-4
        delta = None if not off else "no change vs all heads" if same else \
            f"{100 * (now - full):+.1f} points vs all heads"
        st.metric(task.metric_name, f"{now:.1%}", delta, delta_color="off" if same else "normal")
        level, which = task.chance(n_eval)
        st.caption(f"{len(off)} of {n_heads} heads off · {task.about(n_eval)}")
        st.caption(f"Task: {task.name}. With every head: {full:.1%}. Chance: {level:.1%} ({which}).")
        if off and same:
            st.caption("No answer changed: importance is the loss's slope; the metric moves only when answers flip.")
        st.download_button("Plan as JSON", json.dumps(imp.plan_of(sorted(off)), sort_keys=True), "pruning_plan.json",
                           "application/json", help="The heads switched off, in the original model's numbering.")
        if note := task.groups_note(json.loads(plan_json)):
            st.caption(note)

    gated_section(key, sel.text, sel.text_b, plan_json)

    st.header("Pruning curve")
    seeds = st.slider("Random orders (seeds)", 2, 6, 3, key="prune_seeds", **B)
    ranked = imp.order(by_position)
    if st.toggle(f"Compute the curve: about {9 * (2 + seeds) + 2} runs over {task.about(n_eval)}", key="prune_curve",
                 **B):
        res = heavy.run("prune_curve", ("prune-curve", key, n_score, n_eval, seeds), "Removing heads step by step…",
                        lambda progress: imp.pruning_curve(task.metric(n_eval), by_position, seeds, progress=progress),
                        thread=False)
        plot(figure(curve, res, task.metric_name.lower()), "pruning-curve", key="prune_curve_fig")
        st.caption(f"At 40 % removed: importance order {res['importance'][4]:.1%}, random "
                   f"{res['random_mean'][4]:.1%} ± {res['random_std'][4]:.1%}, reverse {res['reverse'][4]:.1%}; "
                   f"chance {level:.1%}.")

    pruning_patching.render(sel.model, m, grad, task.name)
    pruning_circuit.render(sel.model, m, key, n_eval, by_position)
    real_pruning_section(key, ranked, m.device, task)


st.title("Head pruning lab")
sel = selection()
source = st.radio("Judge the heads by", ["a built-in example task", "your model on your labelled rows"],
                  index=int(prune_own.labelled_head(sel.model)), horizontal=True, key="prune_source", **B)
if source.startswith("your"):
    prune_own.render(sel)
else:
    builtin(sel)

explain(
    "Every head's output is multiplied by a gate ξ before the layer mixes heads. At ξ = 1, the gradient of the "
    "loss with respect to ξ says how much dimming the head would move the loss; its mean size over batches is "
    "the head's importance (Michel et al. 2019), normalised within each layer. The iterative plan gates off the "
    "least important heads a step at a time and scores again, until the metric falls below the share you keep.",
    r"I_h=\mathbb{E}_x\left|\frac{\partial \mathcal{L}(x)}{\partial \xi_h}\right|,\quad"
    r"\mathrm{MHA}(x)=\sum_h \xi_h\,\mathrm{Att}_h(x)\,W^O_h",
    "heads = x.view(B, T, H, hs) * xi[layer][:, None]  # (B, T, H, hs) before the output projection",
)
