"""The Circuits view's choices after the edges are scored: which edges make the circuit (the top count, or every edge
whose |score| passes a threshold), and a head of the circuit opened in Inside a head or in Heads, by a click on its
node in the graph or by the box and buttons (the keyboard's way). An encoder-decoder's heads carry their stack
("enc.L0H1", "dec.L1H0", "cross.L1H2"): Heads opens that stack; Inside a head shows decoder-only models, so it is
not offered there.

    kept(ranked, "count", 20, 0.0) -> 20;  kept(ranked, THRESHOLD, 0, 0.1) -> how many |score| >= 0.1
    head_of({"selection": {"points": [{"customdata": "L1H3"}]}}) -> (1, 3)
    name_of({"selection": {"points": [{"customdata": "cross.L1H3"}]}}) -> "cross.L1H3"
"""
from __future__ import annotations

import re

import streamlit as st

from ui import family
from ui import patching as patch_ui
from ui.classroom import links
from ui.state import BIND

COUNT, THRESHOLD = KEEP = ("count", "|score| ≥ threshold")
HEAD = "circ_head"   # the head box's key; a click on a node sets it
CLICKS = "_circ_clicks"  # session key: clicks so far, so that each click gets a fresh chart (no selection left behind)
_HEAD = re.compile(r"(?:(enc|dec|cross)\.)?L(\d+)H(\d+)")  # 'L1H3', 'cross.L1H3'
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


def name_of(event) -> str | None:
    """The head named by the first selected point whose customdata or text names one ("L1H3", "cross.L1H3", or a
    receiver "L1H3.k"); None for no selection, or a click on the embedding, an MLP or the logits."""
    try:
        points = event["selection"]["points"] if event else []
    except (KeyError, TypeError):
        points = []
    for point in points:
        for value in (point.get("customdata"), point.get("text")):
            value = value[0] if isinstance(value, list | tuple) and value else value
            if isinstance(value, str) and (m := _HEAD.match(value)) and value[m.end():] in ("", ".q", ".k", ".v"):
                return m.group(0)
    return None


def head_of(event) -> tuple[int, int] | None:
    """The (layer, head) of name_of(event), its stack left out."""
    name = name_of(event)
    return None if name is None else _order(name)[1:]


def heads_in(names) -> list[str]:
    """The heads among senders and receivers, in their order, once each: ['L0H1', 'L1H0.k', 'L1.mlp'] ->
    ['L0H1', 'L1H0']."""
    return list(dict.fromkeys(m.group(0) for n in names if (m := _HEAD.match(n)) and n[m.end():] in ("", ".q", ".k",
                                                                                                    ".v")))


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
    options = list(dict.fromkeys(sorted(circuit_heads, key=_rank) + sorted(all_heads, key=_rank)))
    if not options:
        return
    c1, c2, c3 = st.columns([2, 2, 2], vertical_alignment="bottom")
    name = c1.selectbox("A head (the circuit's first; or click its node)", options, key=HEAD)
    if name not in options:  # a head of another model left in the box
        name = options[0]
    stack, layer, head = _order(name)
    if stack:
        c2.caption("Inside a head shows decoder-only models: Heads shows this head's weights.")
    elif model_key in patch_ui.INSIDE or family.family(model) == "decoder":
        c2.button(f"Open {name} in Inside a head", key="circ_open", icon="🧮", on_click=patch_ui.open_inside,
                  args=(model_key, layer, head, text), help="On the first pair's clean text.")
    c3.button(f"Open {name} in Heads", key="circ_open_heads", icon="🔎", on_click=open_head,
              args=(layer, head, text, stack), help="On the first pair's clean text" + (" (the source)." if stack
                                                                                         else "."))


def _order(name: str) -> tuple[str, int, int]:
    """'L10H2' -> ('', 10, 2); 'cross.L1H0' -> ('cross', 1, 0)."""
    m = _HEAD.fullmatch(name)
    return m.group(1) or "", int(m.group(2)), int(m.group(3))


def _rank(name: str) -> tuple[int, int, int, int]:
    """The head box's order: layer by layer, an encoder's heads first, then per decoder layer its self-attention's
    heads and its cross-attention's: 'enc.L1H0' < 'dec.L0H3' < 'cross.L0H0' < 'dec.L1H0'."""
    stack, layer, head = _order(name)
    return int(stack in ("dec", "cross")), layer, int(stack == "cross"), head
