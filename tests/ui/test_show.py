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


def test_a_figure_is_built_once_per_server_and_each_page_gets_its_own_copy():
    import numpy as np

    from ui.runtime import cache
    from viz import efficient as V

    cache.STORES["results"].clear()
    built = []

    def online_state(*args):
        built.append(args)
        return V.online_state(*args)

    ms, ls = np.arange(12.0).reshape(3, 4), np.ones((3, 4))
    first = show.figure(online_state, ms, ls, ["a", "b", "c", "d"], 1)
    assert first.to_plotly_json() == V.online_state(ms, ls, ["a", "b", "c", "d"], 1).to_plotly_json()  # same numbers
    first.update_layout(font=dict(size=40))  # what presenter mode and a lesson's marks do to the page's copy
    first.add_shape(type="line", x0=0, x1=1, y0=0, y1=1)
    second = show.figure(online_state, ms.copy(), ls, ["a", "b", "c", "d"], 1)  # equal arrays: the same figure
    assert len(built) == 1 and second is not first
    assert second.layout.font.size is None and len(second.layout.shapes) == len(first.layout.shapes) - 1
    show.figure(online_state, ms, ls, ["a", "b", "c", "d"], 2)  # another step: another figure
    assert len(built) == 2
