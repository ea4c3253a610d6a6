
import numpy as np
import pytest

from viz.common import CLICK_TARGETS, token_labels
from viz.heads import GAP, TILE, clicked_head, head, overview, pool, tile, tile_side


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


def test_labels_keep_quotes_as_plotly_draws_them():
    """plotly turns &lt; &gt; &amp; and numeric entities back into characters, not &quot;, which it drew as written:
    quotes stay quotes, and no figure module escapes text another way."""
    from pathlib import Path

    assert token_labels(['"', "'", "&", "<b>"]) == ['"', "'", "&amp;", "&lt;b&gt;"]
    root = Path(__file__).resolve().parents[2]
    calls = [str(p.relative_to(root)) for folder in ("viz", "ui", "views") for p in (root / folder).rglob("*.py")
             if "html.escape(" in p.read_text(encoding="utf-8") and p.name != "common.py"]
    assert not calls, f"escape plotly text with viz.common.escape: {calls}"


def test_head_figure_hover_and_token_axes():
    w = _weights(1, 1, 3)[0, 0]
    fig = head(w, ["a", "b", "a"], ["a", "b", "a"], "L0 H0")
    assert "weight %{z:.3f}" in fig.data[0].hovertemplate
    assert list(fig.data[0].x) == ["a ·0", "b", "a ·2"]


@pytest.mark.parametrize("n", [128, 512, pytest.param(2048, marks=pytest.mark.slow)])  # 2048: 11 s
def test_overview_payload_under_2mb_at_any_length(n):
    w = _weights(T=n)
    toks = [f"tok{i}" for i in range(n)]
    fig = overview(w, toks, toks)
    assert len(fig.to_json()) < 2_000_000
    assert np.asarray(fig.data[0].z).shape == (6 * (TILE + 1), 12 * (TILE + 1))


def test_pooling_keeps_each_blocks_largest_weight():
    w = _weights(L=1, H=2, T=130)  # 130 tokens -> blocks of 3, the last one partial
    pooled, f = pool(w)
    assert f == 3 and pooled.shape == (1, 2, 44, 44)
    assert pooled[0, 1, 10, 20] == w[0, 1, 30:33, 60:63].max()
    assert pooled[0, 0, 43, 43] == w[0, 0, 129, 129]
    assert pool(w[:, :, :64, :64])[1] == 1


@pytest.mark.parametrize("t, size", [(130, 64), (512, 16), (97, 8)])
def test_pooling_equals_a_loop_over_blocks(t, size):
    w = _weights(L=2, H=3, T=t, seed=t)
    pooled, f = pool(w, size)
    n = -(-t // f)
    loop = np.array([[[[w[l, h, i * f:(i + 1) * f, j * f:(j + 1) * f].max() for j in range(n)] for i in range(n)]
                      for h in range(3)] for l in range(2)])
    assert f == -(-t // size) and np.array_equal(pooled, loop)


def test_a_heads_tile_is_a_click_target_that_names_it_and_says_its_largest_weight():
    """plotly selects no heatmap cell (a click on the overview opened nothing in a browser): each head has a
    transparent marker at its tile's centre, which a click selects and whose hover says the head and its largest
    weight; the heatmap's own hover is off."""
    w = _weights(L=2, H=3, T=4)
    toks = ["a", "b", "a", "d"]
    fig = overview(w, toks, toks)
    heat, targets = fig.data
    assert heat.hoverinfo == "skip" and targets.meta == CLICK_TARGETS and len(targets.x) == 2 * 3
    assert fig.layout.clickmode == "event+select" and fig.layout.hoverdistance == -1
    i, j = np.unravel_index(int(np.argmax(w[1, 2])), (4, 4))
    names = ["a (0)", "b (1)", "a (2)", "d (3)"]  # a repeat told apart by its position alone
    assert targets.hovertext[5].startswith(f"L1 H2: largest weight {100 * w[1, 2].max():.0f}%, query {names[i]} "
                                           f"on key {names[j]}")
    assert clicked_head({"x": targets.x[5], "y": targets.y[5]}) == (1, 2)
    assert clicked_head({"x": heat.x[4], "y": heat.y[6]}) is None  # the gap between two heads


def test_a_thousand_heads_fit_the_same_cell_budget():
    """32 × 32 heads get 16-cell tiles (MiniLM's 72 keep 64), so the overview holds about as many cells and stays
    under 2 MB; each pooled cell is still its block's largest weight, and a click still names the head."""
    assert tile_side(72) == TILE and tile_side(1024) == 16 and tile_side(10**6) == 8
    w = np.random.default_rng(0).random((32, 32, 128, 128), dtype=np.float32)
    w /= w.sum(-1, keepdims=True)
    toks = [f"tok{i}" for i in range(128)]
    fig = overview(w, toks, toks, shared_scale=True)  # colour: the weight itself, in percent
    z = np.asarray(fig.data[0].z)
    assert z.shape == (32 * 17, 32 * 17) and len(fig.to_json()) < 2_000_000
    pooled = z[31 * 17:31 * 17 + 16, 30 * 17:30 * 17 + 16]
    np.testing.assert_array_equal(pooled, np.rint(w[31, 30].reshape(16, 8, 16, 8).max(axis=(1, 3)) * 100))
    targets = fig.data[1]
    assert clicked_head({"x": targets.x[31 * 32 + 30], "y": targets.y[31 * 32 + 30]}) == (31, 30)
