import numpy as np

from analysis.inside_head import entropy_vs_dk, steps
from viz.inside_head import entropy_figure, mask_effect, step_heatmap

TOKENS = ["the", "<b>cat</b>", "the"]


def small_steps():
    g = np.random.default_rng(0)
    x, q, k, v = (g.standard_normal((3, 4)).astype(np.float32) for _ in range(4))
    return steps(x, q, k, v, scale=True, causal=True)


def test_square_step_keeps_repeated_tokens_apart_and_escapes_them():
    fig = step_heatmap("softmax", small_steps()["softmax"], TOKENS)
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2] and list(fig.layout.yaxis.tickvals) == [0, 1, 2]
    assert list(fig.layout.yaxis.ticktext) == ["the", "&lt;b&gt;cat&lt;/b&gt;", "the"]
    assert "(3 × 3)" in fig.layout.title.text
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == 1


def test_masked_scores_are_gaps_that_say_masked():
    fig = step_heatmap("mask", small_steps()["mask"], TOKENS)
    z = np.array(fig.data[0].z, dtype=float)
    assert np.isnan(z[0, 1]) and np.isnan(z[1, 2]) and np.isfinite(z[2, 0])
    assert fig.data[0].text[0][2] == "masked (−∞)"


def test_feature_steps_use_dimensions_as_columns():
    fig = step_heatmap("Q", small_steps()["Q"], TOKENS)
    assert list(fig.layout.xaxis.ticktext) == ["0", "1", "2", "3"] and fig.layout.xaxis.title.text == "dimension"
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float), small_steps()["Q"], atol=1e-6)
    wide = step_heatmap("X", np.zeros((3, 384)), TOKENS)
    assert list(wide.layout.xaxis.tickvals)[:3] == [0, 24, 48] and len(wide.layout.xaxis.tickvals) == 16


def test_entropy_figure_draws_both_curves_on_log_axes():
    r = entropy_vs_dk(d_ks=(1, 4, 16), n_queries=32)
    fig = entropy_figure(r)
    assert len(fig.data) == 4 and fig.layout.xaxis.type == "log"
    np.testing.assert_allclose(fig.data[1].y, r["entropy_unscaled"])


def test_mask_effect_puts_both_weight_matrices_side_by_side():
    s = small_steps()
    fig = mask_effect(np.full((3, 3), 1 / 3), s["softmax"], TOKENS)
    assert len(fig.data) == 2
    np.testing.assert_allclose(np.array(fig.data[1].z, dtype=float), s["softmax"])
