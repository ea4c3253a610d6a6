
import numpy as np

from viz.common import token_labels
from viz.heatmaps import GAP, head, overview, tile


def _weights(L=6, H=12, T=7, seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(T), size=(L, H, T)).astype(np.float32)


def test_overview_has_every_layer_and_head_labelled():
    w = _weights()
    toks = [f"t{i}" for i in range(7)]
    fig = overview(w, toks, toks)
    assert list(fig.layout.xaxis.ticktext) == [f"H{h}" for h in range(12)]
    assert list(fig.layout.yaxis.ticktext) == [f"L{l}" for l in range(6)]
    z = np.asarray(fig.data[0].z)
    assert z.shape == (6 * 8, 12 * 8)
    blocks = [z[l * 8:l * 8 + 7, h * 8:h * 8 + 7] for l in range(6) for h in range(12)]
    assert len(blocks) == 72 and all((b != GAP).all() for b in blocks)


def test_tiles_hold_each_heads_weights_as_percent():
    w = _weights(L=2, H=3, T=4)
    z = tile(w, shared_scale=True)
    np.testing.assert_array_equal(z[4 + 1:4 + 1 + 4, 2 * 5:2 * 5 + 4], np.rint(w[1, 2] * 100))
    per = tile(w, shared_scale=False)
    assert per[5:9, 10:14].max() == 100


def test_labels_escape_html_and_keep_repeats_apart():
    labels = token_labels(["the", "<img src=x onerror=alert(1)>", "the"])
    assert labels[0] != labels[2]
    assert "<img" not in labels[1] and "&lt;img" in labels[1]


def test_head_figure_hover_and_token_axes():
    w = _weights(1, 1, 3)[0, 0]
    fig = head(w, ["a", "b", "a"], ["a", "b", "a"], "L0 H0")
    assert "weight %{z:.3f}" in fig.data[0].hovertemplate
    assert list(fig.data[0].x) == ["a ·0", "b", "a ·2"]


def test_overview_payload_128_tokens_under_2mb():
    w = _weights(T=128)
    toks = [f"tok{i}" for i in range(128)]
    assert len(overview(w, toks, toks).to_json()) < 2_000_000
