"""The circuit graph's nodes carry their names, so that a click on a head's node (a Streamlit selection event) gives
that head: every head node maps to its own layer and head, the embedding, MLPs and logits to none."""
import pandas as pd

from viz.circuits import NODES as NODE_TRACE
from viz.circuits import STUBS, graph_figure, name_of, order


def _edges(fig: dict) -> list[dict]:
    """The edges' lines of a graph figure (as JSON), without the stubs from a head's inputs to its node."""
    return [t for t in fig["data"] if t["mode"] == "lines" and t.get("name") != STUBS]


NODES = ["embed", "L0H0", "L0H1", "L0.mlp", "L1H0", "L1H1", "L1.mlp", "logits"]
EDGES = pd.DataFrame({"sender": ["L0H1", "embed"], "receiver": ["L1H0.k", "L1.mlp"], "score": [-0.8, 0.2]})


def _event(trace: dict, i: int) -> dict:
    """What st.plotly_chart(on_select=...) keeps for a click on point i of `trace` (curve 0 of this selection)."""
    point = {"curve_number": 0, "point_number": i, "point_index": i, "x": trace["x"][i], "y": trace["y"][i],
             "customdata": trace["customdata"][i]}
    return {"selection": {"points": [point], "point_indices": [i], "box": [], "lasso": []}}


def test_a_click_on_a_head_node_gives_that_head_and_other_nodes_none():
    fig = graph_figure(EDGES, NODES).to_plotly_json()
    nodes = next(t for t in fig["data"] if t.get("name") == NODE_TRACE)
    assert list(nodes["customdata"]) == list(nodes["text"]) == NODES
    labels = [(a["x"], a["y"], a["text"]) for a in fig["layout"]["annotations"]]
    assert labels == [(x, y, n.replace(".mlp", " MLP")) for x, y, n in zip(nodes["x"], nodes["y"], NODES)]
    assert all(a["bgcolor"] and a["yshift"] > 0 for a in fig["layout"]["annotations"])  # above the node, on a backing
    got = {name: name_of(_event(nodes, i)) for i, name in enumerate(NODES)}
    assert got == {"embed": None, "L0H0": "L0H0", "L0H1": "L0H1", "L0.mlp": None, "L1H0": "L1H0", "L1H1": "L1H1",
                   "L1.mlp": None, "logits": None}
    assert [order(h) for h in ("L0H1", "L1H0")] == [("", 0, 1), ("", 1, 0)]


def test_edges_tell_their_score_at_their_middle_not_at_their_ends_on_the_nodes():
    fig = graph_figure(EDGES, NODES).to_plotly_json()
    lines = _edges(fig)
    assert len(lines) == 2 and all(t["hoverinfo"] == "skip" for t in lines)
    middles = next(t for t in fig["data"] if t.get("name") == "edges' middles")
    assert list(middles["text"]) == ["L0H1 → L1H0.k<br>score -0.8", "embed → L1.mlp<br>score +0.2"]
    for line, x, y in zip(lines, middles["x"], middles["y"]):
        assert (x, y) == (line["x"][1], line["y"][1]) == ((line["x"][0] + line["x"][2]) / 2,
                                                            (line["y"][0] + line["y"][2]) / 2)


def test_an_edge_along_a_row_bows_off_it_instead_of_running_through_the_nodes_between():
    """(Issue: L0 MLP → L3 MLP ran as a straight line through L1 MLP and L2 MLP, reading as a chain.)"""
    nodes = ["embed", *[f"L{i}{p}" for i in range(4) for p in ("H0", "H1", ".mlp")], "logits"]
    edges = pd.DataFrame({"sender": ["L0.mlp", "L0H1", "L0.mlp"], "receiver": ["L3.mlp", "L3H1.q", "L1.mlp"],
                          "score": [0.5, 0.4, 0.3]})
    lines = _edges(graph_figure(edges, nodes).to_plotly_json())
    far, head_row, near = lines
    assert far["y"][0] == far["y"][2] == -1 and far["y"][1] < -1 and far["line"]["shape"] == "spline"  # below
    assert head_row["y"][1] != head_row["y"][0]          # a head's row: bowed too
    assert near["y"] == [-1, -1, -1]                      # the next column: nothing between, straight


def test_no_selection_and_other_shapes():
    assert name_of(None) is None and name_of({"selection": {"points": []}}) is None
    assert name_of({"selection": {"points": [{"customdata": ["L12H3.q", 1]}]}}) == "L12H3"
    assert name_of({"selection": {"points": [{"customdata": None, "text": "L2H5"}]}}) == "L2H5"
    assert order("L12H3") == ("", 12, 3) and order("cross.L1H0") == ("cross", 1, 0)


def test_a_head_box_lists_the_encoder_first_then_each_decoder_layer_self_then_cross():
    from viz.circuits import rank

    names = ["dec.L1H0", "cross.L0H0", "enc.L1H0", "dec.L0H3", "enc.L0H2"]
    assert sorted(names, key=rank) == ["enc.L0H2", "enc.L1H0", "dec.L0H3", "cross.L0H0", "dec.L1H0"]
    assert sorted(["L1H0", "L0H2", "L0H1"], key=rank) == ["L0H1", "L0H2", "L1H0"]


def test_every_encoder_decoder_node_has_its_own_place_and_cross_attention_reads_the_encoder():
    from experiments.circuits_encdec import graph

    g = graph(2, 2, 2)
    nodes = [*g.senders, "logits"]
    fig = graph_figure(EDGES.head(0), nodes)
    trace = next(t for t in fig.to_plotly_json()["data"] if t.get("name") == NODE_TRACE)
    xy = dict(zip(trace["customdata"], zip(trace["x"], trace["y"])))
    assert list(trace["customdata"]) == nodes and len(set(xy.values())) == len(nodes)  # no two on one spot
    enc_x = [x for n, (x, _) in xy.items() if n.startswith("enc.")]
    rest_x = [x for n, (x, _) in xy.items() if not n.startswith("enc.")]
    assert max(enc_x) < min(rest_x)  # the encoder's columns first
    assert xy["dec.L0H1"][0] < xy["cross.L0H1"][0] < xy["dec.L0.mlp"][0] < xy["dec.L1H0"][0] < xy["logits"][0]
    edges = pd.DataFrame({"sender": ["enc.L1.mlp", "enc.L0H1", "cross.L0H1", "dec.L1.mlp"],
                          "receiver": ["cross.L1H0.k", "enc.L1H0.q", "dec.L1.mlp", "logits"],
                          "score": [-0.9, 0.3, 0.2, -0.1]})
    assert set(zip(edges.sender, edges.receiver)) <= {(s, r) for s, row in zip(g.senders, g.allowed)
                                                      for r, ok in zip(g.receivers, row) if ok}
    lines = _edges(graph_figure(edges, nodes).to_plotly_json())
    k = lines[0]  # enc.L1.mlp -> cross.L1H0.k: from the encoder's node to beside the cross-attention head
    assert (k["x"][0], k["y"][0]) == xy["enc.L1.mlp"] and k["x"][0] in enc_x
    assert (k["x"][-1], k["y"][-1]) == (xy["cross.L1H0"][0] - 0.15, xy["cross.L1H0"][1])
    assert [(t["x"][0], t["y"][0]) for t in lines] == [xy[s] for s in edges.sender]
    assert [(t["x"][-1], t["y"][-1]) for t in lines[2:]] == [xy["dec.L1.mlp"], xy["logits"]]


def test_an_encoder_decoder_click_gives_the_head_with_its_stack():
    from viz.circuits import heads_in

    nodes = ["enc.embed", "enc.L0H1", "dec.L0H0", "cross.L0H1", "dec.L0.mlp", "logits"]
    trace = next(t for t in graph_figure(EDGES.head(0), nodes).to_plotly_json()["data"] if t.get("name") == NODE_TRACE)
    assert [name_of(_event(trace, i)) for i in range(len(nodes))] == [None, "enc.L0H1", "dec.L0H0", "cross.L0H1",
                                                                      None, None]
    assert heads_in(["enc.L0H1.q", "cross.L0H1.k", "enc.L0H1", "dec.L0.mlp", "logits"]) == ["enc.L0H1", "cross.L0H1"]


def test_a_large_model_names_the_circuits_nodes_and_builds_in_a_bounded_number_of_layout_edits():
    """32 × 32 heads (1,058 nodes): the heads the circuit uses, every MLP, the embedding and the logits are named, the
    other heads by their hover only (their names would overlap), and the names are set in one layout edit (one
    add_annotation per node took minutes: each copies every earlier one)."""
    from unittest import mock

    import plotly.graph_objects as go

    nodes = ["embed"] + [f"L{i}{p}" for i in range(32) for p in [*(f"H{h}" for h in range(32)), ".mlp"]] + ["logits"]
    edges = pd.DataFrame({"sender": ["L0H1", "L3.mlp"], "receiver": ["L5H2.k", "logits"], "score": [0.5, -0.2]})
    with mock.patch.object(go.Figure, "add_annotation", side_effect=AssertionError("one edit per node")):
        fig = graph_figure(edges, nodes).to_plotly_json()
    named = {a["text"] for a in fig["layout"]["annotations"]}
    assert {"embed", "logits", "L0H1", "L5H2", "L3 MLP", "L31 MLP"} <= named and "L7H7" not in named
    assert len(named) == 2 + 32 + 2  # two heads, every MLP, the embedding and the logits
    trace = next(t for t in fig["data"] if t.get("name") == NODE_TRACE)
    assert len(trace["hovertext"]) == len(nodes)


def test_each_heads_input_where_edges_end_is_joined_to_its_head():
    """An edge into a head's q, k or v ends beside the head, where it read as ending nowhere (or at a neighbour): a
    short line joins each such input to its own head's node."""
    fig = graph_figure(EDGES, NODES).to_plotly_json()
    stubs = next(t for t in fig["data"] if t.get("name") == STUBS)
    nodes = next(t for t in fig["data"] if t.get("name") == NODE_TRACE)
    head = nodes["customdata"].index("L1H0")
    edge = next(t for t in _edges(fig) if t["x"][0] == nodes["x"][nodes["customdata"].index("L0H1")])  # L0H1 -> L1H0.k
    assert (stubs["x"][0], stubs["y"][0]) == (edge["x"][-1], edge["y"][-1])  # from where the edge ends
    assert (stubs["x"][1], stubs["y"][1]) == (nodes["x"][head], nodes["y"][head]) and stubs["x"][2] is None
