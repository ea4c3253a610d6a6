"""viz.positional: figures carry the arrays they were given, and repeated tokens stay apart."""
import numpy as np
import plotly.graph_objects as go
import torch

from analysis import positional as P
from viz import positional as V


def test_dimension_curves_one_line_per_dimension():
    pe = P.sinusoidal(100, 16)
    fig = V.dimension_curves(pe, [4, 5, 6, 7])
    assert [t.name for t in fig.data] == ["dim 4", "dim 5", "dim 6", "dim 7"]
    np.testing.assert_array_equal(fig.data[2].y, pe[:, 6])


def test_heatmaps_keep_shape_and_put_position_zero_on_top():
    pe = P.sinusoidal(30, 8)
    for fig in (V.table_heatmap(pe, "t"), V.similarity_heatmap(pe @ pe.T, "s", "dot"),
                V.shift_matrix_heatmap(P.shift_matrix(2, 8), 2)):
        assert isinstance(fig, go.Figure)
        assert fig.layout.yaxis.autorange == "reversed"
    assert np.asarray(V.table_heatmap(pe, "t").data[0].z).shape == (30, 8)


def test_wavelength_axis_is_logarithmic():
    fig = V.wavelength_plot(P.wavelengths(64))
    assert fig.layout.yaxis.type == "log" and len(fig.data[0].y) == 64


def test_pca_curve_labels_explained_variance():
    coords, explained = P.principal_components(P.sinusoidal(50, 16), 2)
    fig = V.pca_curve(coords, explained, "PCA")
    assert f"{explained[0]:.0%}" in fig.layout.xaxis.title.text
    np.testing.assert_array_equal(fig.data[0].x, coords[:, 0])


def test_rope_plots():
    q = torch.randn(16, dtype=torch.float64)
    rotated = P.rope(q.expand(20, -1), torch.arange(20)).numpy()
    fig = V.rope_rotation_plot(rotated, [0, 3])
    np.testing.assert_allclose(np.hypot(fig.data[1].x, fig.data[1].y), float(torch.hypot(q[6], q[7])), atol=1e-12)
    scores = P.rope_scores(q, torch.randn(16, dtype=torch.float64), 20).numpy()
    offsets = V.rope_offset_plot(scores, [0, 5])
    np.testing.assert_allclose(offsets.data[1].y, offsets.data[0].y[:15], atol=1e-9)
    assert np.asarray(V.rope_scores_heatmap(scores).data[0].z).shape == (20, 20)


def test_attention_heatmap_keeps_repeated_tokens_and_escapes_html():
    tokens = ["the", "<b>", "walked", "the", "dog"]
    fig = V.attention_heatmap(np.full((5, 5), 0.2), tokens, "a")
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2, 3, 4]
    assert list(fig.layout.xaxis.ticktext) == ["the ·0", "&lt;b&gt;", "walked", "the ·3", "dog"]
    assert np.asarray(fig.data[0].z).shape == (5, 5)
