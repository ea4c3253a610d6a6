"""analysis.precision against independent paths: scipy's Jensen-Shannon distance and torchao's own int8 scales."""
import numpy as np
import torch
from scipy.spatial.distance import jensenshannon

from analysis.precision import biggest, channel_errors, fake_quantize, head_divergence, js_rows, qparams


def test_js_rows_equals_scipy_squared_distance_in_bits():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(7), size=5), rng.dirichlet(np.ones(7), size=5)
    p[0, :3] = 0  # zeros, as a causal row has
    p[0] /= p[0].sum()
    want = [jensenshannon(a, b, base=2) ** 2 for a, b in zip(p, q)]
    np.testing.assert_allclose(js_rows(p, q), want, atol=1e-12)
    assert js_rows([[1.0, 0.0]], [[0.0, 1.0]])[0] == 1.0
    assert js_rows([[0.0, 0.0]], [[0.0, 0.0]])[0] == 0.0  # a blank (pruned) head


def test_head_divergence_and_biggest():
    rng = np.random.default_rng(1)
    ref = rng.dirichlet(np.ones(4), size=(2, 3, 4))          # [L, H, T, T]
    var = ref.copy()
    var[1, 2, 3] = [1, 0, 0, 0]                               # one row of L1 H2 moved
    max_js, mean_js = head_divergence(ref, var)
    assert max_js.shape == (2, 3) and np.count_nonzero(max_js) == 1
    assert np.isclose(mean_js[1, 2], max_js[1, 2] / 4)
    assert biggest(max_js, 1) == [(1, 2)]


def test_per_channel_scales_are_torchaos():
    from models.variants import make

    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(48, 16))
    w = layer[0].weight.detach().numpy()
    scale, zero = qparams(w, axis=0)
    q = make(layer, "int8_dynamic")[0].weight
    np.testing.assert_allclose(q.scale.numpy(), scale, rtol=1e-6)
    diff = np.abs(q.dequantize().numpy() - fake_quantize(w, scale, zero))
    extreme = np.abs(w) == np.abs(w).max(axis=1, keepdims=True)  # exactly half a code from the edge: a float32 tie
    assert ((diff < 1e-6) | extreme).all() and (diff <= scale * 1.0001).all()


def test_per_channel_keeps_small_rows_that_per_tensor_loses():
    w = np.random.default_rng(2).normal(size=(16, 48)) * np.logspace(-2, 0, 16)[:, None]  # rows 100x apart in range
    errors = channel_errors(w)
    assert errors["per_channel"].max() < 0.01 < errors["per_tensor"][0]


def test_affine_zero_point_maps_zero_exactly():
    x = np.array([0.0, 0.7, 6.0])  # all positive, as after a ReLU
    scale, zero = qparams(x, symmetric=False)
    assert fake_quantize(np.array([0.0]), scale, zero)[0] == 0.0
    assert np.abs(fake_quantize(x, scale, zero) - x).max() <= scale / 2 + 1e-12
