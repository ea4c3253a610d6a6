"""Numbers printed on coloured cells can be read (white on the dark ends of a diverging scale, near black in its
pale middle), a log axis names the shares that were measured, and the τ matrix is large enough to read."""
import numpy as np

from viz import attribution as A
from viz import patching as P
from viz.common import text_on_diverging


def test_labels_on_the_dark_ends_are_white_and_in_the_pale_middle_dark():
    assert text_on_diverging([0.57, -0.9, 0.1, 0.0], 0.6) == ["#ffffff", "#ffffff", "#111111", "#111111"]
    fig = P.heads_figure(np.array([[0.57, 0.02], [np.nan, -0.4]]), ["L0", "L1"], "logit difference")
    colours = dict(zip(fig.data[0].text, fig.data[0].textfont.color))
    assert colours["0.57"] == "#ffffff" and colours["0.02"] == "#111111"  # 0.57 of a scale ending at 1


def test_the_deletion_curves_axis_names_the_measured_shares():
    fractions = (0.01, 0.05, 0.1, 0.2, 0.5)
    fig = A.curves({"random": {"comprehensiveness": [0.1] * 5, "sufficiency": [0.2] * 5}}, fractions,
                   {"random": "random"}, "class logit")
    for axis in (fig.layout.xaxis, fig.layout.xaxis2):
        assert axis.type == "log" and list(axis.tickvals) == [1, 5, 10, 20, 50]
        assert list(axis.ticktext) == ["1 %", "5 %", "10 %", "20 %", "50 %"]


def test_the_tau_matrix_is_large_enough_to_read():
    fig = A.tau_matrix(np.eye(3), ["a", "b", "c"], {}, "τ")
    assert fig.layout.height >= 380 and fig.data[0].textfont.size >= 14
