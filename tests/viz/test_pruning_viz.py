"""The pruning figures: one clickable square per head, the cross on switched-off heads, the curve's traces."""
import numpy as np

from viz.pruning import curve, importance_grid


def test_grid_has_one_point_per_head_and_marks_off_heads():
    imp = np.arange(12, dtype=float).reshape(3, 4)
    labels = [["<b>broad</b>"] * 4 for _ in range(3)]
    fig = importance_grid(imp, labels, {(2, 1)}, "importance")
    grid, cross = fig.data
    assert len(grid.x) == 12 and list(grid.customdata[6]) == [1, 2]
    assert "&lt;b&gt;broad" in grid.hovertext[0] and "switched off" in grid.hovertext[9]
    assert list(cross.x) == [1] and list(cross.y) == [2]
    assert list(fig.layout.yaxis.ticktext) == ["L0", "L1", "L2"]


def test_curve_traces():
    res = {"fractions": np.linspace(0, 1, 11), "importance": np.ones(11), "reverse": np.zeros(11),
           "random": np.full((3, 11), 0.5), "random_mean": np.full(11, 0.5), "random_std": np.full(11, 0.1)}
    fig = curve(res, "accuracy")
    assert [t.name for t in fig.data][1:] == ["random order (mean)", "least important first", "most important first"]
    assert len(fig.data[0].x) == 22 and "3 seeds" in fig.data[0].name
