"""Pruning: which heads matter, what removing them costs, and the pruned model to take away."""
import json
from collections import Counter

import streamlit as st

from analysis import importance as imp, paraphrase
from models import gates, prune
from ui import cache
from ui.show import explain, plot
from ui.state import selection
from viz.heatmaps import overview
from viz.pruning import curve, importance_grid

st.title("Head pruning lab")
sel = selection()
if sel.model != "bert" and not sel.model.startswith("hf:"):
    st.info("Head gates are written for BERT-style encoders: pick BERT or another encoder in the sidebar.")
    st.stop()
try:
    enc = cache.model(sel.model, sel.device, sel.dtype)
    gates.layers(enc.model)
except ValueError as err:
    st.error(str(err))
    st.stop()
KEY = (sel.model, sel.device, sel.dtype)


@st.cache_resource
def _results() -> dict:
    """Results of computations that move a progress bar (st.cache_data would replay the bar): key -> value."""
    return {}


def memo(key, compute):
    """store[key], computed on first use; the oldest result goes when 16 are held."""
    store = _results()
    if key not in store:
        while len(store) >= 16:
            store.pop(next(iter(store)))
        store[key] = compute()
    return store[key]


def task_metric(key, n_eval):
    m = cache.model(*key)
    return paraphrase.held_out_metric(m.model, m.tokenizer, n_eval, m.device)


@st.cache_data(show_spinner="Measuring the metric…", max_entries=64)
def metric(key, n_eval, plan_json):
    return task_metric(key, n_eval)(json.loads(plan_json))


@st.cache_data(show_spinner="Running the gated model…", max_entries=16)
def gated_trace(key, text, text_b, plan_json):
    m = cache.model(*key)
    with gates.gated(m.model, gates.mask(gates.head_counts(m.model), json.loads(plan_json))):
        return m.attend(text, text_b)


@st.cache_data(show_spinner="Pruning and timing…", max_entries=4)
def real_pruning(key, plan_json):
    m = cache.model(*key)
    return prune.report(m.model, m.tokenizer, json.loads(plan_json), [a for a, _ in paraphrase.load_pairs()[:16]])


c1, c2, c3 = st.columns(3)
n_score = c1.slider("Pairs that score importance", 8, 40, 16, step=8, key="prune_score")
n_eval = c2.slider("Held-out pairs for the metric", 10, 80, 30, step=10, key="prune_eval")
colour = c3.radio("Colour by", ["gradient importance", "confidence (loss-free)"], key="prune_colour")
bar = st.progress(0.0, text="Scoring heads on the paraphrase task…")
grad, conf, labels = memo(("scores", KEY, n_score), lambda: paraphrase.score_heads(
    enc, n_score, progress=lambda f: bar.progress(f, text="Scoring heads…")))
bar.empty()
shown = grad if colour.startswith("gradient") else conf
counts = Counter(label for row in labels for label in row)
st.caption("Patterns over 24 built-in sentences (Clark et al. 2019; hover a head): "
           + ", ".join(f"{n} {label}" for label, n in counts.most_common()) + ".")
names = [f"L{l} H{h}" for l in range(grad.shape[0]) for h in range(grad.shape[1])]

clicks = st.session_state.get("prune_clicks", 0)
event = st.session_state.get(f"prune_grid_{clicks}")
points = event["selection"]["points"] if event else []
if points:  # a click toggles that head; a fresh chart key clears the selection for the next click
    name = f"L{int(points[0]['y'])} H{int(points[0]['x'])}"
    now = list(st.session_state.get("prune_off", []))
    st.session_state["prune_off"] = [n for n in now if n != name] if name in now else now + [name]
    st.session_state["prune_clicks"] = clicks = clicks + 1
off_names = st.multiselect("Heads switched off (click a square to toggle)", names, key="prune_off")
off = {(int(n.split()[0][1:]), int(n.split()[1][1:])) for n in off_names}
plan_json = json.dumps(imp.plan_of(sorted(off)), sort_keys=True)

left, right = st.columns([3, 1])
with left:
    plot(importance_grid(shown, labels, off, colour.split(" (")[0]), "head-importance",
         key=f"prune_grid_{clicks}", on_select="rerun", selection_mode="points")
with right:
    full, now = metric(KEY, n_eval, "{}"), metric(KEY, n_eval, plan_json)
    st.metric("Retrieval accuracy", f"{now:.1%}", f"{now - full:+.1%} vs all heads" if off else None)
    st.caption(f"{len(off)} of {grad.size} heads off · {n_eval} held-out pairs, scrambled copies as distractors")
    st.download_button("Plan as JSON", plan_json, "pruning_plan.json", "application/json")

st.subheader("Attention with these heads off")
st.caption("A head that is off still computes weights (shown), but its output is dropped, so later layers change.")
try:
    tr = gated_trace(KEY, sel.text, sel.text_b, plan_json)
    for note in tr.notices:
        st.warning(note)
    plot(overview(tr.weights, tr.tokens, tr.key_tokens), "gated-heads", key="prune_overview")
except ValueError as err:
    st.info(str(err))

st.subheader("Pruning curve")
seeds = st.slider("Random orders (seeds)", 2, 6, 3, key="prune_seeds")
if st.toggle(f"Compute the curve: about {9 * (2 + seeds) + 2} runs over {n_eval} held-out pairs", key="prune_curve"):
    bar = st.progress(0.0, text="Removing heads step by step…")
    res = memo(("curve", KEY, n_score, n_eval, seeds), lambda: imp.pruning_curve(
        task_metric(KEY, n_eval), grad, seeds, progress=lambda f: bar.progress(f, text="Removing heads…")))
    bar.empty()
    plot(curve(res, "retrieval accuracy"), "pruning-curve", key="prune_curve_fig")
    st.caption(f"At 40 % removed: importance order {res['importance'][4]:.1%}, random "
               f"{res['random_mean'][4]:.1%} ± {res['random_std'][4]:.1%}, reverse {res['reverse'][4]:.1%}.")

st.subheader("Prune for real")
pct = st.slider("% of heads to remove (least important first)", 10, 90, 50, step=10, key="prune_pct")
if st.toggle("Prune, time and export", key="prune_real"):
    real_plan = imp.first(imp.order(grad), pct / 100)
    rows, gap, blob = real_pruning(KEY, json.dumps(real_plan, sort_keys=True))
    st.dataframe([{"batch": r["batch"], "full (ms)": round(r["full_ms"], 1), "pruned (ms)": round(r["pruned_ms"], 1),
                   "speedup": round(r["speedup"], 2)} for r in rows], hide_index=True)
    st.caption(f"On {enc.device}, fastest of 5 interleaved runs each (a busy machine still adds noise). "
               f"Pruned vs gated model: largest difference {gap:.1e}.")
    st.download_button("Pruned model (.zip)", blob, "pruned_model.zip", help="safetensors, config, tokenizer and "
                       "plan; unzip and reload with models.prune.load_pruned(folder).")

explain(
    "Every head's output is multiplied by a gate ξ before the layer mixes heads. At ξ = 1, the gradient of the "
    "loss with respect to ξ says how much dimming the head would move the loss; its mean size over batches is "
    "the head's importance (Michel et al. 2019), normalised within each layer.",
    r"I_h=\mathbb{E}_x\left|\frac{\partial \mathcal{L}(x)}{\partial \xi_h}\right|,\quad"
    r"\mathrm{MHA}(x)=\sum_h \xi_h\,\mathrm{Att}_h(x)\,W^O_h",
    "heads = x.view(B, T, H, hs) * xi[layer][:, None]  # (B, T, H, hs) before the output projection",
)
