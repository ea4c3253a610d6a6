"""viz.vision: the patch grid and the attention overlays hold the arrays they were given, at patch resolution."""
import numpy as np

from viz.vision import overlays, patch_grid


def test_patch_grid_draws_the_lines_and_names_every_patch():
    fig = patch_grid(np.zeros((8, 8)), (4, 4), 16, "<b>title</b>")
    assert len(fig.layout.shapes) == 3 + 3
    assert [a.text for a in fig.layout.annotations][:5] == ["r0c0", "r0c1", "r0c2", "r0c3", "r1c0"]
    assert "<b>" not in fig.layout.title.text  # escaped


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
