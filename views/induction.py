"""Induction heads: watch a 2-layer attention-only model learn to copy from context, checkpoint by checkpoint,
and knock out its layer-0 heads to see which one the layer-1 induction head needs."""
import numpy as np
import streamlit as st

import models
from analysis.trace import AttentionTrace
from data.induction import PATCH_PAIR, twice
from experiments import induction as ei
from limits.errors import UserError
from models import induction as mi
from ui.classroom import lesson_circuit, links
from ui.patching import inside_button, inside_refusal
from ui.runtime import cache
from ui.show import explain, figure, plot
from ui.state import selection
from viz.heads import clicked_head, overview
from viz.induction import curves, knock_out_bars, phase_change

BIND = dict(bind="query-params", persist_state="session")


@cache.memo("models")  # a checkpoint loads once per server and device
def checkpoint(step: int, device: str, dtype: str):
    return models.load("induction", device, dtype, checkpoint=step)


@cache.memo("results", spinner="Running the checkpoint…")
def trace(step: int, device: str, dtype: str, text: str) -> AttentionTrace:
    return checkpoint(step, device, dtype).attend(text)


@cache.memo("results", spinner="Knocking out each layer-0 head on fresh sequences…")
def knock_out() -> tuple[list[dict], int, list[float]]:  # at the last checkpoint, on the CPU copy (about a second)
    return ei.knock_out_evidence(checkpoint(mi.steps()[-1], "cpu", "float32").net)


st.title("Induction heads")
st.caption("A 2-layer attention-only transformer trained on random syllables in which a stretch comes back later: "
           "once it has seen “… ba ke …”, the next “ba” should be followed by “ke”. Olsson et al. (2022) found "
           "that this ability arrives suddenly, when two heads learn to work together.")
steps = mi.steps()
if not steps:
    st.error("The induction checkpoints are missing: run `python -m train.induction` to make them.")
    st.stop()
record = cache.memo("results")(mi.scores)()  # the per-checkpoint scores train/induction.py measured
prefix = np.array([r["prefix_matching"] for r in record["scores"]])  # (checkpoints, L, H)
jump = phase_change(record["steps"], prefix[:, -1].max(-1).tolist())
step = st.select_slider("Checkpoint (training step)", steps, value=steps[-1], key="ind_step", **BIND,
                        help="The checkpoints are dense around the phase change.")
sel = selection()

st.header("Across training: the phase change")
plot(figure(curves, record, step), "induction-curves", key="ind_curves")
at = record["scores"][record["steps"].index(step)]
best = np.array(at["prefix_matching"])
l, h = np.unravel_index(best.argmax(), best.shape)
st.markdown(f"At step **{step:,}**: loss on the first copy **{at['loss_first']:.2f}**, on the repeat "
            f"**{at['loss_repeat']:.2f}** (ICL score {at['icl_score']:+.2f}); the best prefix matcher is "
            f"**L{l} H{h}** at {best.max():.2f}. "
            + (f"The repeat's loss falls and layer 1's prefix matching jumps together by step {jump:,}."
               if jump is not None else ""))
st.caption(f"Scores on {record['eval']['sequences']} fresh sequences (seed {record['eval']['seed']}, never trained "
           "on), measured by train/induction.py on each checkpoint as shipped; the losses leave out the first token "
           "of each copy, which nothing can predict. Loss 4.16 = ln 64 is a uniform guess over the 64 syllables.")
explain(
    "An **induction head** completes patterns: at a token A it looks back for an earlier A and attends to the token "
    "**after** it (B), then copies B into the prediction. It needs a **previous-token head** in an earlier layer "
    "to write “my previous token was A” into each position, so the induction head's query (A) can match that key. "
    "Prefix matching measures the attention; copying measures whether what the head reads raises that token's logit.",
    r"\text{ICL} = \mathcal{L}_{\text{repeat}} - \mathcal{L}_{\text{first}},\quad "
    r"\text{prefix}_h = \frac{1}{L-1}\sum_{j=0}^{L-2} A_h[b+j,\; a+j+1],\quad "
    r"\text{copy}_h = \frac{\sum_i \lambda_i}{\sum_i |\lambda_i|}\big(W_U W_O^h W_V^h W_E\big)",
    "att = net(ids)[1][layer]                        # (n, nh, T, T)\n"
    "w = att.permute(0, 2, 3, 1)[rows, b + j, a + j + 1]  # (n, L-1, nh): repeat -> after the first copy\n"
    "prefix = w.mean((0, 1))                         # (nh,)\n"
    "lam = np.linalg.eigvals(W_U @ W_O[h] @ W_V[h] @ W_E)  # copying: positive eigenvalues copy",
)

st.header(f"The heads at step {step:,}")
st.session_state.setdefault("ind_text", twice(12))
text = st.text_input("Syllables (a random sequence written twice by default)", key="ind_text", max_chars=400,
                     **BIND, help="Any syllables of the model's 64: a consonant of bdfghjklmnprstvz then a vowel "
                                  "of aeio, separated by spaces; at most 48.")
try:
    tr = trace(step, sel.device, sel.dtype, text)
except UserError as err:
    st.error(str(err))
    st.stop()
clicks = st.session_state.get("ind_clicks", 0)
event = st.session_state.get(f"ind_overview_{clicks}")
picked = clicked_head(event["selection"]["points"][0]) if event and event["selection"]["points"] else None
if picked is not None:  # a fresh chart key clears the selection for the next click
    st.session_state["ind_layer"], st.session_state["ind_head"] = picked
    st.session_state["ind_clicks"] = clicks = clicks + 1
st.caption("Rows are layers, columns heads; in each square query tokens run down, key tokens across. Once the "
           "induction head has formed, its rows for the second copy show a stripe parallel to the diagonal: each "
           "repeated token looks at the token after its earlier occurrence. The previous-token head in layer 0 "
           "draws the line just below the diagonal. Click a head to pick it.")
plot(figure(overview, tr.weights, tr.tokens, tr.key_tokens), "induction-heads", key=f"ind_overview_{clicks}",
     on_select="rerun", selection_mode="points")
c1, c2 = st.columns(2)
layer = c1.selectbox("Layer", range(tr.n_layers), key="ind_layer", format_func=lambda i: f"L{i}", **BIND)
head = c2.selectbox("Head", range(tr.n_heads), key="ind_head", format_func=lambda i: f"H{i}", **BIND)
st.caption(f"The buttons open this head at this checkpoint (step {step:,}) on these syllables: they set the "
           "sidebar's model to that checkpoint and its text to these syllables.")
sidebar = {"model": "induction" if step == steps[-1] else f"induction@{step}", "text": text}  # 'induction@1100'
c1, c2 = st.columns(2)
c1.button(f"Open L{layer} H{head} in Heads", key="ind_to_heads", icon="🔲", on_click=links.request,
          args=("heads", {"heads_layer": f"L{layer}", "heads_head": f"H{head}"}, sidebar))
to = {"ih_model": "Induction (attention-only)", "ih_ind_layer": f"L{layer}", "ih_ind_head": f"H{head}"}
inside_button(c2, inside_refusal("induction", checkpoint(step, sel.device, sel.dtype)), f"Open L{layer} H{head} in "
              "Inside a head", key="ind_to_inside", on_click=links.request, args=("inside_head", to, sidebar))

st.header(f"Causal evidence at the last checkpoint (step {steps[-1]:,}): knock-outs")
rows, induction_head, prev = knock_out()
plot(figure(knock_out_bars, rows), "induction-knockout", key="ind_knockout")
prev_head = int(np.argmax(prev))
key = next(k for k in rows[0] if k.startswith("prefix matching"))
drop = {r["knocked out"]: rows[0][key] - r[key] for r in rows[1:-1]}  # "L0 Hh" -> fall in prefix matching
biggest = max(drop, key=drop.get)
others = max(v for k, v in drop.items() if k != biggest)
ko = next(r for r in rows if r["knocked out"] == biggest)
st.markdown(
    f"Layer 1's best prefix matcher at this checkpoint is **L1 H{induction_head}** (prefix matching "
    f"{rows[0][key]:.2f}). Layer 0's "
    f"previous-token head is **L0 H{prev_head}**: it puts {prev[prev_head]:.2f} of its attention on the previous "
    f"token (the others {', '.join(f'{p:.2f}' for i, p in enumerate(prev) if i != prev_head)}). Knocking out "
    f"**{biggest}** hurts most: L1 H{induction_head}'s prefix matching falls to **{ko[key]:.2f}** and the repeat's "
    f"loss rises from {rows[0]['loss on the repeat']:.2f} to **{ko['loss on the repeat']:.2f}**; any other layer-0 "
    f"head lowers the prefix matching by at most {others:.2f}. "
    + (f"So L1 H{induction_head} finds the earlier occurrence through what the previous-token head wrote."
       if biggest == f"L0 H{prev_head}" else "Here that is not the previous-token head: look at the maps above."))
st.dataframe([{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
             hide_index=True)
st.caption("A knock-out multiplies a head's output by 0 before the output projection (models/gates.py, for this "
           "call only), on the same fresh sequences as above.")
lesson_circuit.section()  # the lesson's induction step only: the circuit EAP finds, its path ranked

st.header("Patching: which head carries the copied syllable")
clean, corrupt, answer, wrong = PATCH_PAIR
st.markdown(f"Clean: `{clean}` → the model should write **{answer}**. Corrupted: the first copy has "
            f"**{wrong}** after 'ba' instead. Copying one head's output from the clean run into the corrupted "
            "one shows which head brings the answer back: a head of layer 1, not of layer 0 (the corrupted "
            "syllable reaches the answer only through what layer 1 copies). It need not be the best prefix matcher "
            "named above: prefix matching averages over many sequences, patching asks about this one pair.")
st.button("Patch every head in the Patching view", key="ind_to_patching", icon="🩹", on_click=links.request,
          args=("patching", {"patch_clean": clean, "patch_corrupt": corrupt, "patch_answer": answer,
                             "patch_wrong": wrong}),
          kwargs={"sidebar": {"model": "induction"}})
