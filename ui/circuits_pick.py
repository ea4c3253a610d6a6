"""The Circuits view's choices after the edges are scored: which edges make the circuit (the top count, or every edge
whose |score| passes a threshold), and a head of the circuit opened in Inside a head or in Heads, by a click on its
node in the graph or by the box and buttons (the keyboard's way).

    kept(ranked, "count", 20, 0.0) -> 20;  kept(ranked, THRESHOLD, 0, 0.1) -> how many |score| >= 0.1
    head_of({"selection": {"points": [{"customdata": "L1H3"}]}}) -> (1, 3)
"""
from __future__ import annotations

import re

import streamlit as st

from ui import family, links
from ui import patching as patch_ui
from ui.state import BIND

COUNT, THRESHOLD = KEEP = ("count", "|score| ≥ threshold")
HEAD = "circ_head"   # the head box's key; a click on a node sets it
CLICKS = "_circ_clicks"  # session key: clicks so far, so that each click gets a fresh chart (no selection left behind)
_HEAD = re.compile(r"L(\d+)H(\d+)")


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


def head_of(event) -> tuple[int, int] | None:
    """The (layer, head) of the first selected point whose customdata or text names a head ("L1H3", or a receiver
    "L1H3.k"); None for no selection, or a click on the embedding, an MLP or the logits."""
    try:
        points = event["selection"]["points"] if event else []
    except (KeyError, TypeError):
        points = []
    for point in points:
        for value in (point.get("customdata"), point.get("text")):
            value = value[0] if isinstance(value, list | tuple) and value else value
            if isinstance(value, str) and (m := _HEAD.fullmatch(value.partition(".")[0])):
                return int(m.group(1)), int(m.group(2))
    return None


def chart_key() -> str:
    return f"circ_graph_{st.session_state.get(CLICKS, 0)}"


def picked(key: str) -> None:
    """on_select callback of the graph: the clicked head goes into the head box, whose buttons then open it. Runs
    before the next run, so the box can still be set."""
    head = head_of(st.session_state.get(key))
    if head is not None:
        st.session_state[CLICKS] = st.session_state.get(CLICKS, 0) + 1
        st.session_state[HEAD] = "L{}H{}".format(*head)


def open_head(layer: int, head: int, text: str) -> None:
    """Button callback: the Heads view at this layer and head, on `text` (the first pair's clean text)."""
    links.request("heads", {"heads_layer": f"L{layer}", "heads_head": f"H{head}"}, {"text": text, "text_b": ""})


def head_boxes(model_key: str, model, circuit_heads: list[str], all_heads: list[str], text: str) -> None:
    """The head box (the circuit's heads first, then the others) and a button to each view that opens it."""
    options = list(dict.fromkeys(sorted(circuit_heads, key=_order) + sorted(all_heads, key=_order)))
    if not options:
        return
    c1, c2, c3 = st.columns([2, 2, 2], vertical_alignment="bottom")
    name = c1.selectbox("A head (the circuit's first; or click its node)", options, key=HEAD)
    layer, head = _order(name)
    if model_key in patch_ui.INSIDE or family.family(model) == "decoder":
        c2.button(f"Open {name} in Inside a head", key="circ_open", icon="🧮", on_click=patch_ui.open_inside,
                  args=(model_key, layer, head, text), help="On the first pair's clean text.")
    c3.button(f"Open {name} in Heads", key="circ_open_heads", icon="🔎", on_click=open_head, args=(layer, head, text),
              help="On the first pair's clean text.")


def _order(name: str) -> tuple[int, int]:
    """'L10H2' -> (10, 2)."""
    m = _HEAD.fullmatch(name)
    return int(m.group(1)), int(m.group(2))
