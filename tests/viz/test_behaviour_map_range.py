"""The corpus view's behaviour map colours a fixed, stated range: a narrow spread of shares is not stretched."""
import numpy as np

from viz.corpus import behaviour_map


def test_close_shares_get_close_colours_on_a_stated_0_to_100_range():
    values = np.array([[0.1084, 0.1090], [0.1086, np.nan]])  # the spread that once filled the whole colour scale
    heat = behaviour_map(values, "previous token", True).data[0]
    assert (heat.zmin, heat.zmax) == (0.0, 1.0) and heat.colorbar.tickformat == ".0%"
    assert heat.colorbar.title.text == "previous token<br>(colour: 0 to 100%)"
    assert list(heat.text[0]) == ["11%", "11%"] and heat.text[1][1] == "—"


def test_distance_runs_from_zero_to_its_largest_mean():
    heat = behaviour_map(np.array([[1.5, 2.25], [3.0, 7.125]]), "distance", False).data[0]
    assert (heat.zmin, heat.zmax) == (0.0, 7.125) and "(colour: 0 to 7.12)" in heat.colorbar.title.text
