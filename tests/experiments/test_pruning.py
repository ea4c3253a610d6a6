"""What the pruning view reads of experiments.pruning and experiments.importance besides the report: scores put in
the original model's numbering (on the tiny decoder whole and with a head cut out), the timing table and the note
that names the steepest head."""
import numpy as np
import pytest

import models
from experiments.importance import measures_note
from experiments.pruning import in_original_numbers, timing_rows
from models.prune import pruned_copy


@pytest.fixture(scope="module")
def tiny():
    return models.load("tiny").net


def test_a_whole_model_keeps_every_head_where_it_is(tiny):
    grad = np.arange(8, dtype=float).reshape(2, 4)  # (L, H)
    conf = grad[::-1].copy()
    place, now, grad_o, conf_o = in_original_numbers(tiny, grad, conf)
    assert place == {(layer, h): (layer, h) for layer in range(2) for h in range(4)}
    np.testing.assert_array_equal(now, grad)
    np.testing.assert_array_equal(grad_o, grad)
    np.testing.assert_array_equal(conf_o, conf)


def test_a_cut_head_is_inf_in_every_table_and_left_out_of_the_places(tiny):
    net = pruned_copy(tiny, {0: [1]})  # layer 0 holds 3 heads now
    grad = np.array([[0.0, 2.0, 3.0, 9.0], [4.0, 5.0, 6.0, 7.0]])  # (L, positions); position 3 of layer 0 is empty
    place, now, grad_o, conf_o = in_original_numbers(net, grad)
    assert len(place) == 7 and all(p[1] < 3 for (layer, _), p in place.items() if layer == 0)
    assert np.isinf(now[0, 3]) and np.isfinite(now[1]).all() and conf_o is None
    assert np.isinf(grad_o).sum() == 1 and sorted(grad_o[np.isfinite(grad_o)]) == sorted(now[np.isfinite(now)])
    conf = np.ones((2, 4))
    assert np.array_equal(np.isinf(in_original_numbers(net, grad, conf)[3]), np.isinf(grad_o))


def test_timing_rows_and_the_measures_note():
    rows = timing_rows([{"batch": 16, "full_ms": 12.345, "pruned_ms": 8.21, "speedup": 1.50365}])
    assert rows == [{"batch": 16, "full (ms)": 12.3, "pruned (ms)": 8.2, "speedup": 1.5}]
    grad = np.array([[0.1, 0.5, np.inf], [0.9, 0.2, np.inf]])
    assert "steepest here: L1 H0" in measures_note(grad)
