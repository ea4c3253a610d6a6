"""The circuit graph's nodes carry their names, so that a click on a head's node (a Streamlit selection event) gives
that head: every head node maps to its own layer and head, the embedding, MLPs and logits to none."""
import pandas as pd

from ui.circuits_pick import head_of
from viz.circuits import graph_figure

NODES = ["embed", "L0H0", "L0H1", "L0.mlp", "L1H0", "L1H1", "L1.mlp", "logits"]
EDGES = pd.DataFrame({"sender": ["L0H1", "embed"], "receiver": ["L1H0.k", "L1.mlp"], "score": [-0.8, 0.2]})


def _event(trace: dict, i: int) -> dict:
    """What st.plotly_chart(on_select=...) keeps for a click on point i of `trace` (curve 0 of this selection)."""
    point = {"curve_number": 0, "point_number": i, "point_index": i, "x": trace["x"][i], "y": trace["y"][i],
             "customdata": trace["customdata"][i]}
    return {"selection": {"points": [point], "point_indices": [i], "box": [], "lasso": []}}


def test_a_click_on_a_head_node_gives_that_head_and_other_nodes_none():
    fig = graph_figure(EDGES, NODES).to_plotly_json()
    nodes = next(t for t in fig["data"] if t["mode"] == "markers+text")
    assert list(nodes["customdata"]) == list(nodes["text"]) == NODES
    got = {name: head_of(_event(nodes, i)) for i, name in enumerate(NODES)}
    assert got == {"embed": None, "L0H0": (0, 0), "L0H1": (0, 1), "L0.mlp": None, "L1H0": (1, 0), "L1H1": (1, 1),
                   "L1.mlp": None, "logits": None}


def test_edges_tell_their_score_at_their_middle_not_at_their_ends_on_the_nodes():
    fig = graph_figure(EDGES, NODES).to_plotly_json()
    lines = [t for t in fig["data"] if t["mode"] == "lines"]
    assert len(lines) == 2 and all(t["hoverinfo"] == "skip" for t in lines)
    middles = next(t for t in fig["data"] if t["mode"] == "markers")
    assert list(middles["text"]) == ["L0H1 → L1H0.k<br>score -0.8", "embed → L1.mlp<br>score +0.2"]
    for line, x, y in zip(lines, middles["x"], middles["y"]):
        assert (x, y) == (sum(line["x"]) / 2, sum(line["y"]) / 2)


def test_no_selection_and_other_shapes():
    assert head_of(None) is None and head_of({"selection": {"points": []}}) is None
    assert head_of({"selection": {"points": [{"customdata": ["L12H3.q", 1]}]}}) == (12, 3)
    assert head_of({"selection": {"points": [{"customdata": None, "text": "L2H5"}]}}) == (2, 5)
