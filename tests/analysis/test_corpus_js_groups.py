"""The bounded head similarity of analysis.corpus_stats: past JS_HEADS heads, heads are compared within groups of
consecutive layers, and what is kept equals the full pairwise computation on those pairs."""
import numpy as np
import pytest

from analysis import corpus_stats as cs
from analysis import head_similarity
from tests.analysis.test_corpus_stats import empty


@pytest.mark.parametrize("shape, layers", [((12, 12), 12), ((6, 12), 6), ((32, 32), 4), ((24, 16), 8),
                                           ((13, 32), 1), ((1, 200), 1), ((4, 48), 2)])
def test_the_groups_follow_the_models_shape_alone(shape, layers):
    assert cs.js_layers(*shape) == layers
    groups = cs.js_groups(*shape)
    assert [l for g in groups for l in g] == list(range(shape[0]))              # every layer once, in order
    assert all(len(g) * shape[1] <= cs.JS_HEADS for g in groups) or layers == 1


def test_bounded_sums_equal_the_full_sums_on_the_pairs_they_keep():
    rng = np.random.default_rng(7)
    tokens = ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]
    n_layers, n_heads, n = 4, 48, len(tokens)                                    # 192 heads: over JS_HEADS
    w = rng.random((n_layers, n_heads, n, n)) ** 3
    w[2, 5] = w[3, 40]                                                           # twins within group 1
    w = (w / w.sum(-1, keepdims=True)).astype(np.float32)
    full = head_similarity.js_pair_sums(w.reshape(n_layers * n_heads, n, n))   # (192, 192): every pair
    shard = cs.sentence(w, tokens, 0)
    assert shard.js_total.shape == (2, 96, 96) and shard.js_rows == n
    for g, layers in enumerate(cs.js_groups(n_layers, n_heads)):
        heads = slice(layers[0] * n_heads, (layers[-1] + 1) * n_heads)
        np.testing.assert_allclose(shard.js_total[g], full[heads, heads], rtol=1e-12, atol=1e-12)
    assert cs.js_names(shard)[1][:2] == ["L2 H0", "L2 H1"] and len(cs.js_names(shard)[1]) == 96
    pairs = cs.js_pairs(cs.merge([shard, cs.sentence(w, tokens, 1)]), 0.01)
    assert pairs[0] == {"head": "L2 H5", "twin": "L3 H40", "distance": 0.0}
    group = {name: g for g, names in enumerate(cs.js_names(shard)) for name in names}
    assert all(group[p["head"]] == group[p["twin"]] for p in cs.js_pairs(shard, 1.0))  # never across groups


def test_a_small_model_compares_every_pair():
    rng = np.random.default_rng(8)
    w = rng.random((2, 3, 5, 5)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    shard = cs.sentence(w, ["a", "b", "c", "d", "e"], 0)
    np.testing.assert_allclose(shard.js_total[0], head_similarity.js_pair_sums(w.reshape(6, 5, 5)), atol=1e-12)
    assert empty(2, 3).js_total.shape == (1, 6, 6)
