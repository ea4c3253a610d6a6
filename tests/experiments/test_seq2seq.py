"""What the Seq2seq view reads besides attention: the shipped length figures and their long-string share, a
transformer hypothesis's cross-attention rows (one head, or the layer's mean) against its own trace, and the table of
greedy against beam search read back from the model's hypotheses."""
import numpy as np
import pytest

import models
from experiments import seq2seq as E


@pytest.fixture(scope="module")
def transformer():
    if "seq2seq-transformer" not in models.available():
        pytest.skip("the built-in transformer date model is not in this copy")
    return models.load("seq2seq-transformer")


def test_long_exact_averages_the_lengths_of_forty_or_more():
    reverse = {"lengths": [39, 40, 41], "x": {"exact": [1.0, 0.5, 0.0]}}
    assert E.long_exact(reverse, "x") == 0.25
    shipped = E.length_figures()["reverse"]
    long = [e for n, e in zip(shipped["lengths"], shipped["reverse-attention"]["exact"]) if n >= E.LONG]
    assert long and E.long_exact(shipped, "reverse-attention") == pytest.approx(np.mean(long))
    assert E.long_exact(shipped, "reverse-attention") > E.long_exact(shipped, "reverse-none")  # the bottleneck


def test_cross_rows_are_the_rows_that_chose_each_written_token(transformer):
    greedy = transformer.hypotheses("3 march 2021", 1)[0]
    w = greedy.trace.weights  # (L, H, T_dec, S)
    n = len(greedy.output)
    np.testing.assert_array_equal(E.cross_rows(greedy, 0, 1), w[0, 1, :n])
    np.testing.assert_allclose(E.cross_rows(greedy, 1, None), w[1, :, :n].mean(0), rtol=1e-6)
    assert E.cross_rows(greedy, 0, None).shape == (n, len(greedy.source))


def test_the_table_lists_greedy_then_each_beam(transformer):
    greedy, beams = transformer.hypotheses("3 march 2021", 1)[0], transformer.hypotheses("3 march 2021", 2)
    rows = E.hypotheses_table(greedy, beams)
    assert [r[""] for r in rows] == ["greedy", "beam 1", "beam 2"]
    assert [r["output"] for r in rows] == ["".join(h.output) for h in (greedy, *beams)]
    assert rows[1]["log-probability"] == round(beams[0].score, 4) >= rows[2]["log-probability"]
