"""viz.vision: the patch grid and the attention overlays hold the arrays they were given, at patch resolution."""
import numpy as np

from viz.vision import overlays, patch_grid


def test_patch_grid_draws_the_lines_numbers_rows_and_columns_and_names_every_patch_on_hover():
    fig = patch_grid(np.zeros((8, 8)), (4, 4), 16, "<b>title</b>")
    assert len(fig.layout.shapes) == 3 + 3
    assert not fig.layout.annotations  # no label painted over the pixels
    assert list(fig.layout.xaxis.ticktext) == ["c0", "c1", "c2", "c3"] and list(fig.layout.xaxis.tickvals) == [
        0.5, 2.5, 4.5, 6.5]  # at the centres of 2-pixel patches
    assert list(fig.layout.yaxis.ticktext) == ["r0", "r1", "r2", "r3"]
    (hover,) = [t for t in fig.data if t.type == "heatmap" and t.customdata is not None]
    assert hover.customdata[1][2] == "r1c2" and "patch %{customdata}" in hover.hovertemplate
    assert "<b>" not in fig.layout.title.text  # escaped


def test_a_large_grid_labels_every_other_row_and_column():
    fig = patch_grid(np.zeros((224, 224)), (14, 14), 1.0)
    assert list(fig.layout.yaxis.ticktext) == [f"r{i}" for i in range(0, 14, 2)]
    assert list(fig.layout.xaxis.tickvals)[:2] == [7.5, 39.5]  # 16-pixel patches


def test_overlays_put_each_map_on_its_own_panel_over_the_image():
    image = np.random.default_rng(0).random((8, 8, 3)) * 255
    maps = np.random.default_rng(1).random((5, 4, 4))
    fig = overlays(image, maps, [f"H{h}" for h in range(5)], 255, per_row=4)
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len([t for t in fig.data if t.type == "image"]) == 5 and len(heat) == 5
    for m, t in zip(maps, heat):
        assert np.allclose(np.asarray(t.z), m) and t.dx == 2 and t.x0 == 0.5  # a 2-pixel patch, centred
        assert t.customdata[1][2] == "r1c2"
    assert fig.layout.height == 230 * 2 + 60
    assert list(fig.layout.xaxis2.ticktext) == ["c0", "c1", "c2", "c3"]
    assert fig.layout.yaxis.showticklabels and not fig.layout.yaxis2.showticklabels  # rows named once per row
