"""Gradient importance against finite differences, the pruning curve, loss-free scores, and MiniLM."""
import numpy as np
import pytest
import torch

from experiments import paraphrase
from experiments.importance import confidence, first, gradient_importance, order, plan_of, pruning_curve
from tests.models.test_gates_prune import tiny_bert


def _batches():
    g = torch.Generator().manual_seed(5)
    out = []
    for n in (3, 4):  # 3n sentences: a, b and scrambled b, as paraphrase.encode lays them out
        ids = torch.randint(1, 60, (3 * n, 7), generator=g)
        out.append({"input_ids": ids, "attention_mask": torch.ones_like(ids)})
    return out


def test_gradient_importance_equals_finite_differences(finite_differences):
    model, batches, eps = tiny_bert(seed=2, dtype=torch.float64), _batches(), 1e-6
    got = gradient_importance(model, paraphrase.loss, batches)
    fd = finite_differences(model, paraphrase.loss, batches, eps)
    fd /= np.linalg.norm(fd, axis=1, keepdims=True)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0)


def test_order_and_plans():
    assert order(np.array([[.3, .1], [.2, .9]])) == [(0, 1), (1, 0), (0, 0), (1, 1)]
    assert plan_of([(0, 1), (2, 0), (0, 3)]) == {0: [1, 3], 2: [0]}
    assert first([(1, 1), (0, 0), (0, 1), (1, 0)], 0.5) == {0: [0], 1: [1]}


def test_curve_on_an_additive_metric():
    """metric = importance kept: importance order loses least, reverse most, random in between."""
    imp = np.random.default_rng(0).random((3, 4))
    metric = lambda plan: imp.sum() - sum(imp[l, h] for l, hs in plan.items() for h in hs)  # noqa: E731
    res = pruning_curve(metric, imp, seeds=4)
    assert res["fractions"].shape == (11,) and res["random"].shape == (4, 11)
    assert np.all(res["importance"] >= res["random_mean"] - 1e-12)
    assert np.all(res["random_mean"] >= res["reverse"] - 1e-12)
    assert res["importance"][0] == pytest.approx(imp.sum()) and res["importance"][-1] == pytest.approx(0)


def test_a_curve_of_four_heads_plots_only_the_fractions_a_plan_removes():
    """With 4 heads, 10 % steps would round to plans of 0, 0, 1, 1, 2, ... heads drawn at 10 %, 20 %, ...: the
    curve takes each whole count of heads once, at its own fraction."""
    imp = np.array([[0.4, 0.1, 0.3, 0.2]])
    res = pruning_curve(lambda plan: float(sum(map(len, plan.values()))), imp, seeds=2)  # metric: heads removed
    np.testing.assert_allclose(res["fractions"], [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_allclose(res["importance"], [0, 1, 2, 3, 4])
    assert res["random"].shape == (2, 5)


def test_confidence():
    one_hot = np.zeros((1, 1, 4, 4))
    one_hot[..., 0] = 1
    uniform = np.full((1, 1, 4, 4), 0.25)
    assert confidence([one_hot])[0, 0] == 1 and confidence([uniform])[0, 0] == 0.25


@pytest.mark.slow
def test_minilm_importance_order_beats_random_at_40_percent():
    from models.hf import load

    torch.set_num_threads(2)
    enc = load("bert")
    batches, _ = paraphrase.task(enc.tokenizer, 40, 0)
    metric = paraphrase.held_out_metric(enc.model, enc.tokenizer, 60)
    ranked = order(gradient_importance(enc.model, paraphrase.loss, batches))
    by_importance = metric(first(ranked, 0.4))
    random = [metric(first([ranked[i] for i in np.random.default_rng(s).permutation(72)], 0.4)) for s in range(3)]
    assert by_importance > np.mean(random), (by_importance, random)
    assert by_importance > metric(first(ranked[::-1], 0.4))
