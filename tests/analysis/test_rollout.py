"""Rollout against hand-computed cases and the formula R = A^_L ... A^_1 written out independently."""
import numpy as np
import pytest

from analysis.rollout import fuse_heads, mix_residual, rollout


def _random_weights(rng, layers, heads, n, causal=False):
    logits = rng.normal(size=(layers, heads, n, n)) * 2
    if causal:
        logits = np.where(np.tril(np.ones((n, n))) > 0, logits, -np.inf)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def test_two_layers_by_hand():
    # one head; layer 1 sends everything to token 0, layer 2 is uniform
    layer1 = [[1.0, 0.0], [1.0, 0.0]]
    layer2 = [[0.5, 0.5], [0.5, 0.5]]
    w = np.array([[layer1], [layer2]], dtype=np.float32)  # (2, 1, 2, 2)
    # residual 0.5: A^1 = [[1, 0], [.5, .5]], A^2 = [[.75, .25], [.25, .75]]; R = A^2 @ A^1
    assert np.allclose(rollout(w, residual=0.5), [[0.875, 0.125], [0.625, 0.375]])
    assert np.allclose(rollout(w, residual=0.0), [[1.0, 0.0], [1.0, 0.0]])
    assert np.allclose(rollout(w, residual=1.0), np.eye(2))


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_formula_on_random_weights(fusion, causal):
    rng = np.random.default_rng(3)
    w = _random_weights(rng, layers=4, heads=3, n=7, causal=causal)
    fused = {"mean": w.mean(1), "max": w.max(1), "min": w.min(1)}[fusion].astype(np.float64)
    expected = np.eye(7)
    for layer in fused:  # layer 1 first
        a_hat = 0.7 * layer + 0.3 * np.eye(7)
        a_hat /= a_hat.sum(-1, keepdims=True)
        expected = a_hat @ expected
    got = rollout(w, residual=0.3, fusion=fusion)
    assert np.allclose(got, expected, atol=1e-12)
    assert np.allclose(got.sum(-1), 1.0)
    if causal:  # a token never draws on later input tokens
        assert np.allclose(np.triu(got, 1), 0.0)


def test_zero_row_stays_zero():
    fused = np.array([[[0.0, 0.0], [0.2, 0.8]]])  # min fusion can leave a row empty
    a_hat = mix_residual(fused, residual=0.0)
    assert np.array_equal(a_hat[0, 0], [0.0, 0.0])
    assert np.allclose(a_hat[0, 1], [0.2, 0.8])


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="square"):
        rollout(np.full((1, 1, 2, 3), 1 / 3, dtype=np.float32))  # cross-attention
    with pytest.raises(ValueError, match="fusion"):
        fuse_heads(np.ones((1, 1, 2, 2)), "median")
    with pytest.raises(ValueError, match="residual"):
        mix_residual(np.ones((1, 2, 2)), residual=1.5)
