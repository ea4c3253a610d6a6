"""The Circuits view's widgets: its pairs as the page reads them (a built-in task's or the names task's from
experiments.circuits_task, the Patching view's pair as its boxes hold it now, or an uploaded CSV file), and its choices
after the edges are scored: which edges make the circuit (the top count, or every edge
whose |score| passes a threshold), and a head of the circuit opened in Inside a head or in Heads, by a click on its
node in the graph or by the box and buttons (the keyboard's way). An encoder-decoder's heads carry their stack
("enc.L0H1", "dec.L1H0", "cross.L1H2"): Heads opens that stack; Inside a head shows decoder-only models, so it is
not offered there.

    kept(ranked, "count", 20, 0.0) -> 20;  kept(ranked, THRESHOLD, 0, 0.1) -> how many |score| >= 0.1

Only the widgets and their callbacks are here: a click's head is read back by viz.circuits (name_of, order, rank),
the tasks are experiments.circuits_task's. Folded into views/circuits.py, the page would take ~230 lines against a
view's ~150.
"""
from __future__ import annotations

import streamlit as st

import limits
from data import circuit_tasks as tasks
from experiments import circuits_task as T
from limits.errors import UserError
from ui import family
from ui import patching as patch_ui
from ui.classroom import links
from ui.state import BIND
from viz.circuits import name_of, order, rank

COUNT, THRESHOLD = KEEP = ("count", "|score| ≥ threshold")
HEAD = "circ_head"   # the head box's key; a click on a node sets it
CLICKS = "_circ_clicks"  # session key: clicks so far, so that each click gets a fresh chart (no selection left behind)
STACKS = {"enc": "encoder", "dec": "decoder", "cross": "cross"}  # a name's stack -> the Heads view's part


def keep_control() -> tuple[str, int, float]:
    """The circuit's rule: (COUNT or THRESHOLD, the count, the threshold), from three widgets on one row."""
    c1, c2, c3 = st.columns([3, 2, 2])
    by = c1.radio("Keep edges by", KEEP, key="circ_keep", horizontal=True, **BIND,
                  help="The strongest edges up to a count, or every edge whose score is at least this large in size.")
    top = c2.number_input("Edges in the circuit", 1, 500, 20, key="circ_top", disabled=by != COUNT, **BIND)
    threshold = c3.number_input("Threshold on |score|", 0.0, None, 0.1, step=0.01, format="%.4g",
                                key="circ_threshold", disabled=by != THRESHOLD, **BIND)
    return by, int(top), float(threshold)


def kept(ranked, by: str, top: int, threshold: float) -> int:
    """How many of `ranked`'s edges (strongest |score| first) the circuit keeps: the count, or every edge whose
    |score| is at least the threshold (these are the first ones, as ranked is sorted)."""
    if by == COUNT:
        return min(top, len(ranked))
    return int((ranked.score.abs() >= threshold).sum())


def chart_key() -> str:
    return f"circ_graph_{st.session_state.get(CLICKS, 0)}"


def picked(key: str) -> None:
    """on_select callback of the graph: the clicked head goes into the head box, whose buttons then open it. Runs
    before the next run, so the box can still be set."""
    name = name_of(st.session_state.get(key))
    if name is not None:
        st.session_state[CLICKS] = st.session_state.get(CLICKS, 0) + 1
        st.session_state[HEAD] = name


def open_head(layer: int, head: int, text: str, stack: str | None = None) -> None:
    """Button callback: the Heads view at this layer and head, on `text` (the first pair's clean text), and for an
    encoder-decoder's head its stack ("enc" opens the encoder's self-attention, "dec" the decoder's, "cross")."""
    from ui.family import PART_LABELS

    part = {"heads_part": PART_LABELS[STACKS[stack]]} if stack else {}  # a bound radio's URL value is its label
    links.request("heads", {"heads_layer": f"L{layer}", "heads_head": f"H{head}", **part}, {"text": text, "text_b": ""})


def head_boxes(model_key: str, model, circuit_heads: list[str], all_heads: list[str], text: str) -> None:
    """The head box (the circuit's heads first, then the others) and a button to each view that opens it."""
    options = list(dict.fromkeys(sorted(circuit_heads, key=rank) + sorted(all_heads, key=rank)))
    if not options:
        return
    c1, c2, c3 = st.columns([2, 2, 2], vertical_alignment="bottom")
    name = c1.selectbox("A head (the circuit's first; or click its node)", options, key=HEAD)
    if name not in options:  # a head of another model left in the box
        name = options[0]
    stack, layer, head = order(name)
    if stack:
        c2.caption("Inside a head shows decoder-only models: Heads shows this head's weights.")
    elif model_key in patch_ui.INSIDE or family.family(model) == "decoder":
        patch_ui.inside_button(c2, patch_ui.inside_refusal(model_key, model), f"Open {name} in Inside a head",
                               key="circ_open", on_click=patch_ui.open_inside, args=(model_key, layer, head, text),
                               help="On the first pair's clean text.")
    c3.button(f"Open {name} in Heads", key="circ_open_heads", icon="🔎", on_click=open_head,
              args=(layer, head, text, stack), help="On the first pair's clean text" + (" (the source)." if stack
                                                                                         else "."))


def faithfulness_notes(curve: list[float], ablation: str, n_pairs: int, kept_edges: int, ranked, by: str,
                       threshold: float) -> None:
    """What the faithfulness numbers cannot say here, drawn beside them: no edge reaching the threshold; pairs whose
    corrupted run keeps much of the logit difference already (curve[0], no edge clean: faithfulness near 1 then says
    little, as Patching warns of a tiny gap); one pair, whose mean ablation is its corrupt ablation."""
    if by != COUNT and not kept_edges:
        st.info(f"No edge reaches |score| ≥ {threshold:g} (the strongest: {ranked.score.abs().max():.3g}): lower "
                "the threshold, or keep a count of edges.")
    if curve[0] >= 0.5:
        read = "the corrupted run" if ablation == "corrupt" else "the mean of the corrupted runs"
        st.warning(f"With no edge clean (every edge reading {read}) the model already keeps {curve[0]:.2f} of its "
                   "logit difference: the corrupted text hardly moves the answer, so faithfulness near 1 says little "
                   "here. Pick pairs whose corrupted text changes the answer (the Patching view warns of a small or "
                   "negative gap).")
    if ablation == "mean" and n_pairs == 1:
        st.caption("One pair: the mean of the pairs' corrupted runs is its own, so mean ablation equals corrupt "
                   "ablation here.")


def said(pair: tuple) -> str:
    """A pair (clean, corrupt, answer, wrong) as a caption says it, each piece in quotes that show its spaces:
    '“When Mary and John”, corrupted “When Alice and Bob”: “ Mary” against “ John”'."""
    clean, corrupt, answer, wrong = pair
    return f"“{clean}”, corrupted “{corrupt}”: “{answer}” against “{wrong}”"


def task_pairs(task: str, model_key: str, model, n: int) -> list[tuple]:
    """The pairs of the chosen task (one of experiments.circuits_task.TASKS), or UserError with one sentence."""
    if task == T.BUILT:
        pairs = T.built_in_pairs(model_key, n)
    elif task == T.NAMES:
        pairs = T.names_pairs(model, n)
    elif task == T.PATCHING:
        pair = patch_ui.pair_for(model_key, model)
        pairs = [tuple(st.session_state.get(k) or v for k, v in zip(patch_ui.KEYS, (pair.clean, pair.corrupt,
                                                                                    pair.answer, pair.wrong)))]
    else:
        up = st.file_uploader("Pairs (CSV with columns clean, corrupt, answer, wrong)", type=["csv"], key="circ_csv")
        if up is None:
            raise UserError("Upload a CSV file of pairs with the columns clean, corrupt, answer, wrong.")
        pairs = tasks.from_csv(up.getvalue(), n, limits.current().pruning_upload_bytes)
    T.known_answers(model, pairs)
    return pairs
