"""A figure's sentence for a screen reader says what the figure holds: its numbers, read back from its data."""
import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from viz.common import CHART_TEXT, fonts, readable_text
from viz.describe import describe, number, plain, strongest_heads, values
from viz.heads import head, overview_alt, overview_pool


def _contrast(a: str, b: str = "#ffffff") -> float:
    def lum(h):
        c = [int(h.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
        c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_a_head_names_its_strongest_cell_by_query_and_key():
    w = np.full((4, 4), 0.1, dtype=np.float32)
    w[2, 1] = 0.7  # 'sat' puts 0.7 on 'cat'
    text = describe(head(w, ["the", "cat", "sat", "down"], ["the", "cat", "sat", "down"], "L3 H4"))
    assert text.startswith("L3 H4.")
    assert "4 × 4 values from 0.1 to 0.7" in text
    assert "strongest 0.7 at query (attending) 'sat', key (attended to) 'cat'" in text


def test_the_sentence_survives_the_figure_as_json_and_as_a_dict():
    """The results store keeps figures as dicts and a link's figure arrives as JSON (numbers as typed arrays)."""
    w = np.random.default_rng(0).dirichlet(np.ones(6), size=6).astype(np.float32)
    fig = head(w, list("abcdef"), list("abcdef"), "L0 H0")
    assert describe(fig) == describe(go.Figure(fig.to_dict())) == describe(pio.from_json(fig.to_json()))
    i, j = np.unravel_index(w.argmax(), w.shape)
    assert f"'{'abcdef'[i]}', key (attended to) '{'abcdef'[j]}'" in describe(fig)


def test_bars_lines_and_empty_figures():
    bars = go.Figure(go.Bar(x=["L0", "L1", "L2"], y=[0.5, -1.25, 0.25], name="share of the logit"))
    assert describe(bars) == "'share of the logit' bars, 3: highest 0.5 for 'L0', lowest -1.25 for 'L1'."
    line = go.Figure(go.Scatter(x=[1, 2, 4], y=[3.0, 1.5, 2.0], name="loss", mode="lines"))
    assert describe(line) == "'loss' line of 3 values over x from 1 to 4, y from 1.5 to 3."
    assert describe(go.Figure()) == "An empty figure."
    many = go.Figure([go.Scatter(y=[i, i + 1], name=f"s{i}") for i in range(6)])
    assert describe(many).endswith("and 2 more series.")


def test_helpers():
    assert plain("<b>L0</b> &lt;s&gt;") == "L0  <s>"
    assert [number(x) for x in (0.6213, 1234.5, 3e-05, 0, 12.5)] == ["0.621", "1,234", "3e-05", "0", "12.5"]
    assert values({"dtype": "f4", "bdata": "AACAPwAAAEA=", "shape": "2"}).tolist() == [1.0, 2.0]
    assert values(["a", "b"]) is None


def test_the_overview_names_the_heads_with_the_largest_single_weights():
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(5), size=(2, 3, 5)).astype(np.float32) * 0.5  # [L, H, T, T], all under 0.5
    w[1, 2, 3, 0], w[0, 1, 4, 2] = 0.9, 0.8
    toks = ["a", "b", "c", "d", "e"]
    text = strongest_heads(w, toks, toks, first_layer=4, top=2)
    assert text.endswith("L5 H2: 'd' puts 0.9 on 'a'; L4 H1: 'e' puts 0.8 on 'c'.")
    pooled, f = overview_pool(w)
    assert f == 1 and "L5 H2: 'd (3)' puts 0.9 on 'a (0)'" in overview_alt(pooled, f, toks, toks, 4)


def test_chart_text_reads_on_white_and_cells_keep_their_own_colour():
    assert _contrast("#808495") < 4.5 <= _contrast(CHART_TEXT)  # why: Streamlit's grey fails, ours passes
    fig = go.Figure(go.Heatmap(z=[[1, 2]], texttemplate="%{z}", colorbar=dict(title=dict(text="w"))))
    fig.update_layout(title="t", xaxis_title="x", annotations=[dict(text="red", font=dict(color="red"))])
    readable_text(fig)
    assert fig.data[0].textfont.color is None  # plotly picks each cell's text against its colour
    assert fig.layout.annotations[0].font.color == "red"
    colours = [f.color for f in fonts(fig, cells=False)]
    assert colours.count("red") == 1 and set(colours) == {CHART_TEXT, "red"}
    assert fig.layout.xaxis.tickfont.color == fig.data[0].colorbar.title.font.color == CHART_TEXT


def test_a_head_grid_drawn_as_squares_names_its_best_head():
    from viz.finder import score_grid

    scores = np.random.default_rng(2).random((3, 4))
    layer, head_ = np.unravel_index(scores.argmax(), scores.shape)
    text = describe(score_grid(scores, "previous token", [(1, 2)]))
    assert f"highest {number(scores.max())} at L{layer} H{head_}" in text
    assert text.startswith("grid of 12 cells")


def test_ticks_kept_as_typed_arrays_still_name_the_cells():
    """A figure from the results store has its numeric tick values as {'dtype', 'bdata'}, not a list."""
    fig = go.Figure(go.Heatmap(z=np.array([[0.1, 0.9], [0.2, 0.3]])))
    fig.update_xaxes(tickvals=np.array([0, 1]), ticktext=["cat", "sat"])
    fig.update_yaxes(tickvals=np.array([0, 1]), ticktext=["the", "a"])
    kept = go.Figure(fig.to_dict(), _validate=False)
    assert isinstance(kept.to_dict()["layout"]["xaxis"]["tickvals"], dict)  # the case that broke the views
    assert "strongest 0.9 at row 'the', column 'sat'" in describe(kept) == describe(fig)


def test_the_numbers_as_a_table_equal_the_figures_data():
    from viz.describe import as_table
    from viz.finder import score_grid

    w = np.random.default_rng(3).dirichlet(np.ones(4), size=4).astype(np.float32)
    table = as_table(head(w, ["the", "cat", "the", "end"], ["the", "cat", "the", "end"], "L0 H0"))
    assert table.shape == (4, 4) and list(table.columns) == ["the ·0", "cat", "the ·2", "end"]
    np.testing.assert_allclose(table.to_numpy(), w.round(4), atol=1e-6)
    bars = as_table(go.Figure(go.Bar(x=["a", "b", "a"], y=[1.0, 2.0, 3.0], name="p")))
    assert list(bars.index) == ["a", "b", "a (2)"] and bars["p"].tolist() == [1.0, 2.0, 3.0]
    scores = np.random.default_rng(4).random((2, 3))
    grid = as_table(score_grid(scores, "previous token", []))
    assert list(grid.index) == ["L0", "L1"] and list(grid.columns) == ["H0", "H1", "H2"]
    np.testing.assert_allclose(grid.to_numpy(), scores.round(4), atol=1e-9)
    assert as_table(go.Figure(go.Scatter(x=[0.5, 1.5], y=[1.0, 2.0]))) is None


def test_readable_text_draws_no_colour_bar_a_figure_did_not_have():
    fig = go.Figure(go.Bar(x=[1.0, -0.5], y=["a", "b"], orientation="h", marker_color=["#0072B2", "#D55E00"]))
    assert "colorbar" not in readable_text(fig).to_dict()["data"][0].get("marker", {})


def test_every_panel_of_a_figure_is_a_table_named_by_its_title():
    from plotly.subplots import make_subplots

    from viz.describe import as_tables

    fig = make_subplots(rows=2, cols=2, subplot_titles=["a", "b", "c", "d"])
    grids = {name: np.arange(6.0).reshape(2, 3) * k for k, name in enumerate("abcd", 1)}
    for k, z in enumerate(grids.values()):
        fig.add_trace(go.Heatmap(z=z, x=["p", "q", "r"], y=["u", "v"]), row=k // 2 + 1, col=k % 2 + 1)
    tables = as_tables(fig)
    assert list(tables) == list("abcd")  # each by its own panel's title, the lower row's by the nearer title
    for name, table in tables.items():
        np.testing.assert_array_equal(table.to_numpy(), grids[name])
        assert list(table.index) == ["u", "v"] and list(table.columns) == ["p", "q", "r"]
    assert list(as_tables(go.Figure(go.Heatmap(z=[[1.0]])))) == [""]  # one heatmap: as_table's one table
