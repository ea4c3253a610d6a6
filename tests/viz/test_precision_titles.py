"""The precision view's divergence grid names each variant above its panel without running into the next one."""
import numpy as np

from viz.precision import divergence_grid


def test_a_long_variant_name_puts_its_parenthesis_on_a_second_line():
    grids = {name: np.zeros((2, 3)) for name in ("fp16", "int8 dynamic (per channel)", "int8 torch.ao (fastest)")}
    titles = [a.text for a in divergence_grid(grids, "mean over tokens").layout.annotations]
    assert titles == ["fp16", "int8 dynamic<br>(per channel)", "int8 torch.ao<br>(fastest)"]
