"""The direct logit attribution figures say their numbers: the grid's cell labels keep two significant digits of the
largest share (a tiny model's shares of ~0.001 read '+0.00' in every cell), and the bars' table names its column
(it read 'series 1')."""
import numpy as np

from viz.describe import as_table
from viz.next_token import dla_bars, dla_heatmap


def test_cell_labels_keep_the_largest_shares_digits():
    assert dla_heatmap(np.array([[0.0012, -0.0009], [0.0001, 0.0]]), "x").data[0].texttemplate == "%{z:+.4f}"
    assert dla_heatmap(np.array([[0.071, -0.02]]), "x").data[0].texttemplate == "%{z:+.3f}"
    assert dla_heatmap(np.array([[2.5, -0.3]]), "x").data[0].texttemplate == "%{z:+.2f}"  # a real model's, as before
    assert dla_heatmap(np.zeros((2, 2)), "x").data[0].texttemplate == "%{z:+.2f}"


def test_the_bars_table_names_its_column():
    table = as_table(dla_bars({"L0H1": 0.5, "embed": -0.2, "bias": 0.0}, "x"))
    assert list(table.columns) == ["share of the logit"] and table.loc["embed"].item() == -0.2


def test_a_grid_with_a_value_that_is_not_finite_still_draws():
    """The split refuses non-finite parts before anything is drawn; the figure itself does not raise on one."""
    assert dla_heatmap(np.array([[np.nan, 1.0], [0.0, np.inf]]), "x").data[0].zmax == 1.0
