"""next_token_probs equals transformers' TemperatureLogitsWarper -> TopKLogitsWarper -> TopPLogitsWarper, then
softmax, over a grid; the meanings the warpers leave out (temperature 0, top-k 0 or above the vocabulary, top-p 0)."""
import numpy as np
import pytest
import torch
from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from analysis.sampling import next_token_probs


def reference(logits, t, k, p):
    s = TemperatureLogitsWarper(t)(None, torch.tensor(logits)[None])
    if k:
        s = TopKLogitsWarper(k)(None, s)
    if p is not None:
        s = TopPLogitsWarper(p)(None, s)
    return s.softmax(-1)[0].double().numpy()


@pytest.mark.parametrize("V", [7, 2052])
def test_equals_the_transformers_warpers_over_a_grid(V):
    rng = np.random.default_rng(V)
    logits = (rng.standard_normal(V) * 3).astype(np.float32)
    logits[:3] = logits[3]  # ties at the boundary of top-k
    for t in (0.25, 0.7, 1.0, 2.5):
        for k in (None, 1, 3, 5, V, V + 10):
            for p in (None, 0.0, 0.3, 0.9, 1.0):
                got = next_token_probs(logits, t, k, p)
                assert np.abs(got - reference(logits, t, k, p)).max() < 1e-7, (t, k, p)
                assert got.sum() == pytest.approx(1.0, abs=1e-6)


def test_documented_meanings():
    logits = np.array([1.0, 3.0, 2.0, 3.0], np.float32)
    assert next_token_probs(logits, temperature=0).tolist() == [0, 1, 0, 0]     # greedy, the first top token
    assert next_token_probs(logits, top_p=0).max() == 1.0                       # one token stays
    assert np.allclose(next_token_probs(logits, top_k=100), next_token_probs(logits))  # above the vocabulary: all
    assert np.allclose(next_token_probs(logits, top_k=0), next_token_probs(logits))    # 0: off
    for bad in (dict(temperature=-1), dict(top_p=1.5), dict(top_k=-2)):
        with pytest.raises(ValueError):
            next_token_probs(logits, **bad)
