"""analysis.corpus_stats, patterns, head_similarity and qk_embedding on hand-made attention, against direct formulas."""
import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

from analysis import corpus_stats as cs
from analysis import head_similarity, patterns, qk_embedding


def empty(n_layers: int, n_heads: int) -> cs.Shard:
    """A shard with no sentences, of a model of this shape (merge's identity; a shape for the tests that need one
    without running a model). The app never makes one: its shards come from sentences."""
    f, groups = len(patterns.FEATURES), cs.js_groups(n_layers, n_heads)
    size = len(groups[0]) * n_heads
    return cs.Shard(np.zeros(0, np.int64), [], np.zeros((0, n_layers, n_heads, f), np.float32),
                    *(np.zeros((n_layers, n_heads, f)) for _ in range(3)), np.zeros((len(groups), size, size)), 0,
                    np.zeros((0, n_layers, n_heads), np.int16), np.zeros((0, n_layers, n_heads), np.float16))


def random_attention(rng, layers, heads, n):
    w = rng.random((layers, heads, n, n)) ** 4
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


SENTENCES = [["[CLS]", "the", "cat", ",", "the", "dog", ".", "[SEP]"], ["[CLS]", "a", "b", "[SEP]"],
             ["[CLS]", "x", "[SEP]"], ["[CLS]", "one", "two", "one", "two", "!", "[SEP]"]] * 3


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(0)
    return [(random_attention(rng, 2, 3, len(t)), t) for t in SENTENCES]


def test_sentence_stats_equal_the_definitions_written_out(corpus):
    w, toks = corpus[0]
    s = patterns.sentence_stats(w, toks)
    n = len(toks)  # layer 1, head 2 by hand
    a = w[1, 2].astype(np.float64)
    assert s[1, 2, 0] == pytest.approx(np.mean([a[q, q - 1] for q in range(1, n)]))
    assert s[1, 2, 1] == pytest.approx(np.mean([a[q, q + 1] for q in range(n - 1)]))
    assert s[1, 2, 2] == pytest.approx(a[:, 0].mean()) and s[1, 2, 3] == pytest.approx(a[:, -1].mean())
    assert s[1, 2, 4] == pytest.approx((a[:, 3] + a[:, 6]).mean())
    assert s[1, 2, 5] == pytest.approx(np.mean([entropy(r) for r in a]) / np.log(n), rel=1e-5)
    assert s[1, 2, 6] == pytest.approx(np.trace(a) / n)
    assert s[1, 2, 7] == pytest.approx((a[1, 4] + a[4, 1]) / 2)  # "the" at 1 and 4: the only repeated token
    assert s[1, 2, 8] == pytest.approx(np.mean([sum(a[q, k] * abs(q - k) for k in range(n)) for q in range(n)]))
    assert np.isnan(patterns.sentence_stats(*corpus[1])[0, 0, 7]) and patterns.FEATURES[7] == "same token"


def test_merged_shards_equal_one_pass_in_any_order(corpus):
    one = cs.merge([cs.sentence(w, t, k) for k, (w, t) in enumerate(corpus)])
    parts = [cs.merge([cs.sentence(w, t, k) for k, (w, t) in list(enumerate(corpus))[a:b]])
             for a, b in ((6, 12), (0, 1), (1, 6))]
    merged = cs.merge(parts)
    for name in ("index", "per_sentence", "count", "total", "total_sq", "js_total", "top_key", "top_weight"):
        np.testing.assert_allclose(getattr(merged, name), getattr(one, name), rtol=1e-12, err_msg=name)
    assert merged.tokens == one.tokens and merged.js_rows == one.js_rows == 8 + 8  # sentences 0 and 8
    back = cs.from_arrays(cs.to_arrays(merged))
    assert back.tokens == one.tokens and np.array_equal(back.top_key, one.top_key)
    with pytest.raises(ValueError, match="different numbers of heads"):
        cs.merge([one, empty(4, 3)])


def test_diffs_give_each_arrays_largest_difference_and_scale(corpus):
    import dataclasses

    one = cs.merge([cs.sentence(w, t, k) for k, (w, t) in enumerate(corpus)])
    other = dataclasses.replace(one, total_sq=one.total_sq.copy(), top_weight=one.top_weight.copy())
    other.total_sq[1, 2, 3] += 0.25
    other.top_weight[5, 0, 1] = np.float16(0.5)
    d = cs.diffs(one, other)
    assert d["total_sq"] == (0.25, float(np.abs(other.total_sq).max()))
    assert d["top_weight"][0] == abs(float(one.top_weight[5, 0, 1]) - 0.5)
    assert all(d[k][0] == 0.0 for k in d if k not in ("total_sq", "top_weight"))
    assert cs.max_abs_diff(one, other) == max(0.25, d["top_weight"][0]) and cs.max_abs_diff(one, one) == 0.0


def test_corpus_means_spread_and_typical_against_numpy(corpus):
    shard = cs.merge([cs.sentence(w, t, k) for k, (w, t) in enumerate(corpus)])
    per = np.stack([patterns.sentence_stats(w, t) for w, t in corpus])           # (N, L, H, F)
    np.testing.assert_allclose(cs.means(shard), np.nanmean(per, axis=0), rtol=1e-6)
    np.testing.assert_allclose(cs.spread(shard), np.nanstd(per, axis=0), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(cs.means(shard), patterns.head_stats(*zip(*corpus)), rtol=1e-6)
    assert cs.typical(shard).shape == (2, 3) and ((0 <= cs.consistency(shard)) & (cs.consistency(shard) <= 1)).all()


def test_typical_sentence_and_consistency_of_a_previous_token_head():
    n = [5, 6, 7, 8]
    maps = []
    for k in n:
        w = np.zeros((1, 1, k, k), np.float32)
        w[0, 0, np.arange(k), np.maximum(np.arange(k) - 1, 0)] = 1 if k != 8 else 0  # the 8-token one is broad
        if k == 8:
            w[:] = 1 / k
        maps.append((w, ["[CLS]"] + [f"w{j}" for j in range(k - 2)] + ["[SEP]"]))
    shard = cs.merge([cs.sentence(w, t, i) for i, (w, t) in enumerate(maps)])
    assert patterns.labels(cs.means(shard)) == [["previous token"]]
    assert cs.consistency(shard)[0, 0] == 0.75 and cs.typical(shard)[0, 0] != 3


def test_js_sums_equal_scipy_and_distance_is_symmetric(corpus):
    w, _ = corpus[0]
    p = w.reshape(6, *w.shape[2:]).astype(np.float64)
    sums = head_similarity.js_pair_sums(p)
    want = sum(jensenshannon(p[1, q], p[4, q], base=2) ** 2 for q in range(p.shape[1]))
    assert sums[1, 4] == pytest.approx(want, rel=1e-4) and sums[4, 1] == sums[1, 4] and sums[2, 2] == 0
    dist = head_similarity.distance(sums, p.shape[1])
    assert np.allclose(dist, dist.T) and (dist <= 1).all()


def test_clusters_map_and_redundancy_find_the_twin_heads():
    rng = np.random.default_rng(1)
    a = random_attention(rng, 1, 4, 9)[0]
    a[3] = a[1] * 0.98 + 0.02 / 9                                                # head 3 copies head 1
    dist = head_similarity.distance(head_similarity.js_pair_sums(a), 9)
    names = ["H0", "H1", "H2", "H3"]
    assert head_similarity.redundant(dist, names, threshold=0.1) == [
        {"head": "H1", "twin": "H3", "distance": pytest.approx(dist[1, 3])}]
    tree = head_similarity.dendrogram(dist, names)
    assert abs(tree["ivl"].index("H1") - tree["ivl"].index("H3")) == 1
    xy = head_similarity.mds(dist)
    assert np.linalg.norm(xy[1] - xy[3]) < min(np.linalg.norm(xy[1] - xy[j]) for j in (0, 2))


def test_search_finds_where_a_head_puts_most_weight(corpus):
    shard = cs.merge([cs.sentence(w, t, k) for k, (w, t) in enumerate(corpus)])
    hits = cs.search(shard, 1, 0, query="the", top=50)
    want = sorted(((r, q) for r, t in enumerate(shard.tokens) for q, tok in enumerate(t) if tok == "the"),
                  key=lambda rq: -float(np.float16(corpus[rq[0]][0][1, 0, rq[1]].max())))
    assert [(h["row"], h["query"]) for h in hits] == want
    for h in hits:
        assert h["key"] == int(corpus[h["row"]][0][1, 0, h["query"]].argmax())
    to_sep = cs.search(shard, 0, 2, key="[SEP]")
    assert all(shard.tokens[h["row"]][h["key"]] == "[SEP]" for h in to_sep)
    assert cs.search(shard, 0, 0, query="/^(one|two)$/", top=100) and not cs.search(shard, 0, 0, query="zebra")
    with pytest.raises(ValueError, match="regular expression"):
        cs.search(shard, 0, 0, query="/(/")


def test_key_translation_keeps_every_querys_ranking_and_softmax():
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(30, 8)) * 3 + 1, rng.normal(size=(25, 8)) * 0.5 - 2
    qn, kn = qk_embedding.normalise(q, k)
    before, after = q @ k.T, qn @ kn.T                                              # (Nq, Nk)
    assert (np.argsort(before, axis=1) == np.argsort(after, axis=1)).all()
    shift = after - before
    np.testing.assert_allclose(shift, shift[:, :1].repeat(25, 1), atol=1e-9)     # a constant per query
    np.testing.assert_allclose(qn.mean(0), kn.mean(0), atol=1e-9)
    assert np.linalg.norm(qn, axis=1).mean() == pytest.approx(np.linalg.norm(k / np.sqrt(
        np.linalg.norm(k, axis=1).mean() / np.linalg.norm(q, axis=1).mean()), axis=1).mean())
    for method in qk_embedding.methods():  # PCA, and t-SNE where scikit-learn is installed
        q2, k2 = qk_embedding.project(q, k, method)
        assert q2.shape == (30, 2) and k2.shape == (25, 2) and np.isfinite(q2).all()
    with pytest.raises(ValueError, match="not available"):
        qk_embedding.project(q, k, "UMAP-9")
