"""viz.common.labels_never_hidden: every axis and colour bar of a figure keeps all its tick labels."""
import numpy as np
import plotly.graph_objects as go

from viz.common import labels_never_hidden
from viz.graph import matrices_figure
from viz.inside_head import step_row


def overflow_settings(fig: go.Figure) -> dict[str, str | None]:
    """Each axis's and colour bar's ticklabeloverflow, from the JSON plotly.js receives."""
    spec = fig.to_plotly_json()
    axes = {k: v.get("ticklabeloverflow") for k, v in spec["layout"].items() if k.startswith(("xaxis", "yaxis"))}
    bars = {f"{k}.colorbar": v.get("colorbar", {}).get("ticklabeloverflow")
            for k, v in spec["layout"].items() if k.startswith("coloraxis")}
    traces = {f"trace{i}.colorbar": t.get("colorbar", {}).get("ticklabeloverflow")
              for i, t in enumerate(spec["data"]) if t["type"] == "heatmap"}
    return axes | bars | traces


def test_every_axis_and_colour_bar_of_a_row_of_panels():
    steps = {name: np.random.default_rng(0).normal(size=(5, 5)) for name in ("QKᵀ", "÷√d_k", "mask")}
    fig = step_row(tuple(steps), steps, list("abcde"))
    assert set(overflow_settings(fig).values()) == {None}  # plotly's default: measure and hide
    settings = overflow_settings(labels_never_hidden(fig))
    assert len(settings) == 9 and set(settings.values()) == {"allow"}  # 3 x, 3 y, 3 colour bars


def test_shared_colour_axes_and_nothing_added():
    fig = labels_never_hidden(matrices_figure([("a", np.eye(3)), ("b", np.eye(3))], list("xyz")))
    settings = overflow_settings(fig)
    assert settings["coloraxis.colorbar"] == settings["coloraxis2.colorbar"] == "allow"
    plain = labels_never_hidden(go.Figure(go.Scatter(x=[1], y=[2])))
    assert "coloraxis" not in plain.to_plotly_json()["layout"]  # no colour axis made where none was used
