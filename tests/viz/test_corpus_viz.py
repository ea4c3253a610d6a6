"""viz.corpus figures from small arrays: what each trace holds, and text kept as text."""
import numpy as np
from scipy.cluster import hierarchy

from analysis import head_similarity
from viz import corpus as vc


def test_behaviour_map_labels_every_head_and_marks_missing_values():
    values = np.array([[0.5, np.nan, 0.25]])
    fig = vc.behaviour_map(values, "same token", percent=True)
    assert fig.data[0].text[0] == ["50%", "—", "25%"] and list(fig.data[0].x) == ["H0", "H1", "H2"]


def test_qk_scatter_colours_and_escapes_hover_text():
    xy = np.arange(8.0).reshape(4, 2)
    tokens = ["the", "<b>", "the", "cat"]
    fig = vc.qk_scatter(xy, xy + 1, "token", np.arange(4), tokens, ["«<b>»"] * 4, "t")
    assert [t.name for t in fig.data] == ["queries", "keys"]
    colours = fig.data[0].marker.color
    assert colours[0] == colours[2] != colours[3] and fig.data[0].text[0] == "«&lt;b&gt;»"
    by_position = vc.qk_scatter(xy, xy, "position", np.arange(4), tokens, tokens, "t")
    assert list(by_position.data[1].marker.color) == [0, 1, 2, 3]


def test_dendrogram_draws_one_bracket_per_merge_and_the_map_one_point_per_head():
    rng = np.random.default_rng(0)
    w = rng.random((5, 6, 6))
    w /= w.sum(-1, keepdims=True)
    dist = head_similarity.distance(head_similarity.js_pair_sums(w), 6)
    names = [f"L0 H{h}" for h in range(5)]
    tree = head_similarity.dendrogram(dist, names)
    fig = vc.dendrogram(tree, "t")
    assert len(fig.data) == len(hierarchy.linkage(dist[np.triu_indices(5, 1)])) == 4
    assert sorted(fig.layout.xaxis.ticktext) == names
    points = vc.head_map(head_similarity.mds(dist), names, np.zeros(5), ["broad"] * 5, "t")
    assert list(points.data[0].text) == names
