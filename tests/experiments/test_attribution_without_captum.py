"""Gradient × input, integrated gradients and Kendall's tau are written out in experiments.attribution_methods so that
no view imports Captum (and the matplotlib it imports) or scipy.stats: here they equal the libraries' own results
exactly, on MiniLM and on the shipped classifier, and importing the module pulls in neither library."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import models
from experiments.attribution_methods import _grad_x_input as grad_x_input
from experiments.attribution_methods import baseline_embeds, integrated_gradients, kendall
from experiments.explained import explain

ROOT = Path(__file__).resolve().parents[2]
captum_attr = pytest.importorskip("captum.attr", reason="Captum is the reference these functions equal")


@pytest.fixture(scope="module")
def bert():
    from models import load

    return load("bert")


@pytest.fixture(scope="module")
def clf(classifier):
    return models.load("hf:" + str(classifier[0]))  # its classifier kept: the class is what is explained


def _captum_ig(ex, steps: int, baseline: str):
    x, base = ex.embeds(), baseline_embeds(ex, baseline)                          # (1, T, D) each
    with torch.enable_grad():
        attr, delta = captum_attr.IntegratedGradients(lambda e: ex.score(e)).attribute(
            x, baselines=base, n_steps=steps, method="gausslegendre", internal_batch_size=min(steps, 32),
            return_convergence_delta=True)                                        # (1, T, D), (1,)
    return attr[0].sum(-1).detach().double().numpy(), float(delta[0])


@pytest.mark.parametrize("steps, baseline", [(4, "pad"), (64, "pad"), (40, "zero")])  # 40: a last batch of 8
def test_integrated_gradients_equals_captum_exactly_on_minilm(bert, one_thread, steps, baseline):
    ex = explain(bert, "The river bank was muddy after the rain", None, "The shore was dirty")
    ours, delta = integrated_gradients(ex, steps, baseline)
    want, want_delta = _captum_ig(ex, steps, baseline)
    assert np.array_equal(ours, want) and delta == want_delta
    assert np.abs(want).max() > 1e-3  # not a vacuous zero


def test_integrated_gradients_and_grad_x_input_equal_captum_on_a_classifier(clf, one_thread):
    ex = explain(clf, "honestly the film was not good")
    assert np.array_equal(integrated_gradients(ex, 64, "pad")[0], _captum_ig(ex, 64, "pad")[0])
    x = ex.embeds().requires_grad_()                                              # (1, T, D)
    with torch.enable_grad():
        want = captum_attr.InputXGradient(lambda e: ex.score(e)).attribute(x)    # (1, T, D)
    assert np.array_equal(grad_x_input(ex), want[0].sum(-1).detach().double().numpy())


def test_kendall_equals_scipy_with_and_without_ties():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(0)
    for n in (2, 3, 17, 128):
        a, b = rng.normal(size=n), rng.normal(size=n)
        tied_a, tied_b = np.round(a, 0), np.round(b * 2, 0) / 2                   # many ties in both
        for x, y in ((a, b), (tied_a, b), (tied_a, tied_b), (a, a), (a, -a)):
            want = 0.0 if np.ptp(x) == 0 or np.ptp(y) == 0 else float(kendalltau(x, y).statistic)
            assert kendall(x, y) == want, (n, x, y)
    assert np.isnan(kendall(np.array([1.0, np.nan, 2.0]), np.array([1.0, 2.0, 3.0])))
    assert kendall(np.array([1.0, 1.0]), np.array([1.0, 2.0])) == 0.0


def test_the_methods_import_neither_captum_nor_scipy_stats():
    code = ("import sys, experiments.attribution, experiments.faithfulness; "
            "print(sorted(m for m in ('captum', 'matplotlib', 'scipy.stats') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "[]", out.stdout
