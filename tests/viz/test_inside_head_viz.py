import numpy as np

from analysis.inside_head import entropy_vs_dk, steps
from viz.inside_head import entropy_figure, mask_effect, step_row

TOKENS = ["the", "<b>cat</b>", "the"]


def small_steps():
    g = np.random.default_rng(0)
    x, q, k, v = (g.standard_normal((3, 4)).astype(np.float32) for _ in range(4))
    return steps(x, q, k, v, scale=True, causal=True)


def panel(name, values, tokens, per_row=1):
    """step_row of `per_row` copies of one step: its first panel is drawn as the view draws one of per_row in a
    row, on the figure's first axes (xaxis, yaxis) with its title in the first annotation."""
    return step_row((name,) * per_row, {name: values}, tokens)


def test_square_step_keeps_repeated_tokens_apart_and_escapes_them():
    fig = panel("softmax", small_steps()["softmax"], TOKENS)
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2] and list(fig.layout.yaxis.tickvals) == [0, 1, 2]
    assert list(fig.layout.yaxis.ticktext) == ["the", "&lt;b&gt;cat&lt;/b&gt;", "the"]
    assert "(3 × 3)" in fig.layout.annotations[0].text
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == 1


def test_masked_scores_are_gaps_that_say_masked():
    fig = panel("mask", small_steps()["mask"], TOKENS)
    z = np.array(fig.data[0].z, dtype=float)
    assert np.isnan(z[0, 1]) and np.isnan(z[1, 2]) and np.isfinite(z[2, 0])
    assert fig.data[0].text[0][2] == "masked (−∞)"


def test_feature_steps_use_dimensions_as_columns():
    fig = panel("Q", small_steps()["Q"], TOKENS)
    assert list(fig.layout.xaxis.ticktext) == ["0", "1", "2", "3"] and fig.layout.xaxis.title.text == "dimension"
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float), small_steps()["Q"], atol=1e-6)
    wide = panel("X", np.zeros((3, 384)), TOKENS)  # a full-width panel: 12 upright ticks, 32 apart
    assert list(wide.layout.xaxis.tickvals) == list(range(0, 384, 32)) and wide.layout.xaxis.tickangle == 0
    narrow = panel("K", np.zeros((3, 32)), TOKENS, per_row=3)  # one of three in a row: 0, 8, 16, 24
    assert list(narrow.layout.xaxis.ticktext) == ["0", "8", "16", "24"]


def test_each_panel_names_what_its_rows_and_columns_are():
    s = small_steps()
    rows = {name: panel(name, s[name], TOKENS).layout.yaxis.title.text for name in s}
    assert rows == {"X": "token (layer input)", "Q": "query token", "K": "key token", "V": "value token",
                    "QKᵀ": "query token", "÷√d_k": "query token", "mask": "query token", "softmax": "query token",
                    "A·V": "query token"}
    cols = {name: panel(name, s[name], TOKENS).layout.xaxis.title.text for name in s}
    assert cols["V"] == "dimension" and cols["softmax"] == "key token"
    v = panel("V", s["V"], TOKENS)
    assert v.data[0].hovertemplate.startswith("value token %{customdata[0]}")
    assert list(v.data[0].customdata[1][2]) == ["&lt;b&gt;cat&lt;/b&gt;", "2"]  # hover: the row's token, the column


def test_a_narrow_square_panel_labels_every_key_of_the_views_window_and_hover_names_each():
    for n in (16, 32):  # the default sentence, the view's window: every key named, each label on its side
        fig = panel("softmax", np.full((n, n), 1 / n), [f"t{i}" for i in range(n)], per_row=3)
        assert list(fig.layout.xaxis.tickvals) == list(range(n)) and fig.layout.xaxis.tickangle == -90
    tokens = [f"t{i}" for i in range(40)]
    fig = panel("softmax", np.full((40, 40), 1 / 40), tokens, per_row=3)
    assert list(fig.layout.xaxis.tickvals) == list(range(0, 40, 2)) and fig.layout.xaxis.ticktext[1] == "t2"
    assert len(fig.layout.yaxis.tickvals) == 40  # rows keep every label: the panel grows in height instead
    assert fig.data[0].customdata[0][1][1] == "t1"


def test_entropy_figure_draws_both_curves_on_log_axes_with_plain_ticks():
    r = entropy_vs_dk(d_ks=(1, 4, 16), n_queries=32)
    fig = entropy_figure(r)
    assert len(fig.data) == 4 and fig.layout.xaxis.type == "log"
    np.testing.assert_allclose(fig.data[1].y, r["entropy_unscaled"])
    assert list(fig.layout.xaxis.ticktext) == ["1", "4", "16"] and list(fig.layout.xaxis2.ticktext) == ["1", "4", "16"]
    assert "1" in fig.layout.yaxis.ticktext and "10" in fig.layout.yaxis.ticktext  # powers of ten, no 2 and 5
    titles = [fig.layout[a].title.text for a in ("xaxis", "yaxis", "xaxis2", "yaxis2")]
    assert titles == ["d_k (dimensions of q and k)", "variance", "d_k (dimensions of q and k)", "entropy (nats)"]


def test_mask_effect_puts_both_weight_matrices_side_by_side():
    s = small_steps()
    fig = mask_effect(np.full((3, 3), 1 / 3), s["softmax"], TOKENS)
    assert len(fig.data) == 2
    np.testing.assert_allclose(np.array(fig.data[1].z, dtype=float), s["softmax"])
    assert (fig.layout.yaxis.title.text, fig.layout.xaxis.title.text) == ("query token", "key token")


def test_a_row_of_steps_is_one_figure_with_each_panel_as_drawn_with_copies_of_itself():
    s = small_steps()
    row = step_row(("Q", "K", "V"), s, TOKENS)
    assert len(row.data) == 3 and [a.text for a in row.layout.annotations] == [
        "Q  (3 × 4)", "K  (3 × 4) · rows: key tokens", "V  (3 × 4) · rows: value tokens"]
    for i, name in enumerate(("Q", "K", "V")):
        alone, suffix = panel(name, s[name], TOKENS, per_row=3), "" if i == 0 else str(i + 1)
        np.testing.assert_array_equal(row.data[i].z, alone.data[0].z)
        assert row.data[i].xaxis == f"x{suffix}" and row.data[i].hovertemplate == alone.data[0].hovertemplate
        assert row.layout[f"yaxis{suffix}"].title.text == (alone.layout.yaxis.title.text if i == 0 else None)
        assert row.layout[f"yaxis{suffix}"].showticklabels is (False if i else None)  # rows named once
        assert list(row.layout[f"xaxis{suffix}"].ticktext) == list(alone.layout.xaxis.ticktext)
    domains = [row.layout[f"xaxis{s}"].domain for s in ("", "2", "3")]
    assert all(a[1] < b[0] for a, b in zip(domains, domains[1:]))  # side by side, apart
    assert all(d[1] < t.colorbar.x < d[1] + 0.08 for d, t in zip(domains, row.data))  # each bar by its own panel
