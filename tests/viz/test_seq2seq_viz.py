import numpy as np

from viz.seq2seq import accuracy_by_length, alignment, char_labels, step_bars


def test_labels_escape_html_and_show_spaces():
    assert char_labels(["a", " ", "<", "&"]) == ["a", "␣", "&lt;", "&amp;"]


def test_alignment_keeps_repeated_characters_apart():
    source, output = list("3 mar 2021"), list("2021-03-03")
    w = np.random.default_rng(0).dirichlet(np.ones(len(source)), size=len(output)).astype(np.float32)
    fig = alignment(source, output, w, title="t", step=4)
    heat = fig.data[0]
    np.testing.assert_array_equal(heat.z, w)
    assert list(fig.layout.xaxis.tickvals) == list(range(len(source)))
    assert list(fig.layout.xaxis.ticktext) == char_labels(source)          # both '2's stay, in order
    assert list(fig.layout.yaxis.ticktext) == output
    rect = fig.layout.shapes[0]
    assert (rect.y0, rect.y1) == (3.5, 4.5)


def test_step_bars_show_one_row_and_what_was_written():
    source, output = list("ab"), list("ba")
    w = np.array([[0.1, 0.9], [0.8, 0.2]], dtype=np.float32)
    fig = step_bars(source, w, output, 1)
    np.testing.assert_allclose(fig.data[0].y, [0.8, 0.2])
    assert "Step 2 of 2" in fig.layout.title.text and "'a'" in fig.layout.title.text


def test_accuracy_chart_has_both_models_in_both_panels():
    curves = {"with attention": {"exact": [1, 0.9], "char": [1, 0.95]},
              "no attention": {"exact": [0.5, 0.0], "char": [0.7, 0.1]}}
    fig = accuracy_by_length([4, 5], curves)
    assert len(fig.data) == 4
    assert [t.name for t in fig.data if t.showlegend] == ["with attention", "no attention"]
    assert list(fig.data[3].y) == [0.7, 0.1]
