"""ui.show.plot: what it hands Streamlit for a figure."""
import plotly.graph_objects as go

from ui import show


def test_plot_passes_the_figure_once_with_its_width_by_name(monkeypatch):
    calls = []
    monkeypatch.setattr(show.st, "plotly_chart", lambda *args, **kwargs: calls.append((args, kwargs)))
    fig = go.Figure(go.Heatmap(z=[[0, 1], [1, 0]]))
    show.plot(fig, "a_view", key="k")
    (args, kwargs), = calls
    assert args == (fig,) and kwargs["width"] == "stretch" and kwargs["key"] == "k"  # nothing positional after it
    assert kwargs["config"]["toImageButtonOptions"]["filename"] == "a_view"
    assert fig.layout.xaxis.ticklabeloverflow == "allow" and fig.data[0].colorbar.ticklabeloverflow == "allow"
