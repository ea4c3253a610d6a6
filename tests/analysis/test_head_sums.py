"""analysis.head_sums (the compiled pass behind the head finder and the corpus statistics on large traces) and
analysis.head_sums_np (its numpy twin, for a sentence's size) against Clark et al.'s behaviours written as plain
numpy formulas, in float64, on random and on real traces: within 1e-6; and against each other."""
import string

import numpy as np
import pytest

from analysis import head_sums, head_sums_np, patterns
from analysis.special import END_TOKENS, START_TOKENS


def paper(w: np.ndarray, tokens: list[str]) -> dict[str, np.ndarray]:
    """Each behaviour as the mean over query rows of a weighted sum over keys (Clark et al. 2019; induction after
    Olsson et al. 2022), whole-array float64 numpy: [L, H, T, T] -> {name: [L, H]}."""
    a = w.astype(np.float64)
    n = len(tokens)
    i = np.arange(n)
    ent = -np.where(a > 0, a * np.log(np.where(a > 0, a, 1)), 0).sum(-1)                   # (L, H, T)
    cls, sep = [t in START_TOKENS for t in tokens], [t in END_TOKENS for t in tokens]
    bare = [t.lstrip("#").lstrip("Ġ▁") for t in tokens]
    punct = [bool(b) and all(c in string.punctuation for c in b) for b in bare]
    same = (np.array(tokens)[:, None] == np.array(tokens)[None, :]) & ~np.eye(n, dtype=bool)
    twin_rows = same.any(-1)
    after = np.zeros((n, n), dtype=bool)
    for q in range(n):
        for j in range(q):
            if tokens[j] == tokens[q] and j + 1 < q - 1:
                after[q, j + 1] = True
    ind_rows = after.any(-1)
    return {"previous token": a[..., i[1:], i[1:] - 1].mean(-1), "next token": a[..., i[:-1], i[:-1] + 1].mean(-1),
            "[CLS]": a[..., cls].sum(-1).mean(-1), "[SEP]": a[..., sep].sum(-1).mean(-1),
            "punctuation": a[..., punct].sum(-1).mean(-1), "broad": ent.mean(-1) / np.log(n),
            "same token": (a * same).sum(-1)[..., twin_rows].mean(-1) if twin_rows.any() else np.nan,
            "induction": (a * after).sum(-1)[..., ind_rows].mean(-1) if ind_rows.any() else np.nan,
            "self": a[..., i, i].mean(-1), "distance": (a * np.abs(i[:, None] - i[None, :])).sum(-1).mean(-1)}


def check(w: np.ndarray, tokens: list[str]) -> None:
    want = paper(w, tokens)
    got = patterns.behaviour_scores(w, tokens)
    stats = patterns.sentence_stats(w, tokens)                                                 # (L, H, F)
    got |= {"self": stats[..., patterns.FEATURES.index("self")], "distance": stats[..., -1]}
    for name, value in want.items():
        scale = max(1.0, float(np.nanmax(np.abs(value))))  # the distance is in tokens: 1e-6 of its size
        np.testing.assert_allclose(got[name], value, atol=1e-6 * scale, rtol=0, err_msg=name)


def random_trace(rng, layers, heads, n, causal):
    w = rng.random((layers, heads, n, n)) ** 6                    # peaked rows, like trained heads
    w[rng.random(w.shape) < 0.05] = 0                              # exact zeros: 0 log 0 = 0
    if causal:
        w = np.tril(w)
    w[..., 0] += 1e-3                                              # no empty row
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("causal", [False, True])
def test_a_random_trace_equals_the_papers_formulas(causal):
    rng = np.random.default_rng(3)
    tokens = ["[CLS]", "the", "cat", ",", "the", "dog", "sat", "the", "cat", ".", "[SEP]"] * 3
    check(random_trace(rng, 3, 4, len(tokens), causal), tokens)


def test_a_large_trace_runs_on_threads_and_equals_the_formulas():
    rng = np.random.default_rng(4)
    tokens = list("abcab cabd.") * 36
    w = random_trace(rng, 4, 8, len(tokens), True)
    assert w.size >= head_sums.THREADED and w.size >= head_sums_np.COMPILED     # the compiled, threaded path
    check(w, tokens)


def tables(rng, n_q, n_k):
    """Random keys [3, Tk], same and after [Tq, Tk] tables, as analysis.patterns builds them from tokens."""
    return rng.random((3, n_k)) < 0.2, rng.random((n_q, n_k)) < 0.1, rng.random((n_q, n_k)) < 0.05


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
def test_numpy_and_compiled_sums_agree_within_1e_6_relative(dtype, causal):
    rng = np.random.default_rng(7)
    for layers, heads, n in [(1, 1, 1), (2, 3, 7), (6, 12, 16), (3, 4, 70)]:
        w = random_trace(rng, layers, heads, n, causal).astype(dtype)                         # (L, H, T, T)
        w[..., -1, :] = 0                                                 # a row of zeros: 0 log 0 everywhere
        keys, same, after = tables(rng, n, n)
        want, got = head_sums.sums(w, keys, same, after), head_sums_np.sums(w, keys, same, after)
        assert want.shape == got.shape == (layers, heads, 1 + 3 + len(head_sums_np.ROWS))
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=1e-7, err_msg=n)


def test_a_sentence_is_scored_without_importing_numba():
    import subprocess
    import sys

    code = ("import sys, numpy as np; from analysis import patterns; w = np.full((6, 12, 16, 16), 1 / 16, "
            "np.float32); patterns.behaviour_scores(w, ['a'] * 16); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("key, text", [("bert", "The cat sat on the mat, and the cat slept."),
                                       ("gpt", "the cat sat on the mat. the cat slept.")])
def test_a_real_models_trace_equals_the_papers_formulas(key, text):
    import models

    trace = models.load(key, "cpu").attend(text)
    assert trace.weights.dtype == np.float32 and len(trace.tokens) > 10
    check(trace.weights, trace.tokens)


def test_the_float32_log_is_within_two_ulp_of_numpys_and_zero_gives_zero():
    a = np.concatenate([np.geomspace(1e-37, 1, 200_001, dtype=np.float32), np.float32([0.5, 1, 2 ** -60])])
    w = a.reshape(1, 1, 1, -1)
    empty = np.zeros((0, a.size)), np.zeros((1, a.size)), np.zeros((1, a.size))
    want = (a.astype(np.float64) * np.log(a.astype(np.float64))).sum()
    assert head_sums.sums(w, *empty)[0, 0, 0] == pytest.approx(want, rel=1e-6)
    for x in a[::997]:  # one at a time: each log, not only their sum
        got = head_sums.sums(np.float32(x).reshape(1, 1, 1, 1), *(t[:, :1] for t in empty))[0, 0, 0]
        assert got == pytest.approx(float(x) * np.log(np.float64(x)), rel=3e-7, abs=1e-45)
    zero = head_sums.sums(np.zeros((1, 1, 1, 3), np.float32), *(t[:, :3] for t in empty))
    assert zero[0, 0, 0] == 0.0


def test_tables_that_do_not_fit_the_weights_are_refused_before_the_compiled_loop():
    w = np.full((1, 1, 3, 4), 0.25, np.float32)
    with pytest.raises(ValueError, match="do not fit attention of 3 × 4 tokens"):
        patterns.behaviour_scores(w, ["a", "b", "c"])


def test_subnormal_weights_add_their_terms_within_2e_37():
    a = np.float32([1e-45, 1e-42, 1e-40, 1e-39, 1.1e-38, 1.2e-38])  # subnormals, then the smallest normals
    for x in a:
        got = head_sums.sums(x.reshape(1, 1, 1, 1), np.zeros((0, 1)), np.zeros((1, 1)), np.zeros((1, 1)))[0, 0, 0]
        want = float(x) * np.log(np.float64(x))
        assert abs(got - want) < 2e-37 and got < 0, x


@pytest.mark.parametrize("sums", [head_sums.sums, head_sums_np.sums], ids=["compiled", "numpy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_head_with_a_nan_weight_gets_nan_in_every_sum_and_the_others_are_untouched(dtype, sums):
    rng = np.random.default_rng(5)
    w = random_trace(rng, 2, 3, 7, False).astype(dtype)
    keys, same, after = tables(rng, 7, 7)
    clean = sums(w, keys, same, after)                                                         # (L, H, 1 + 3 + 6)
    w[1, 2, 4, 0] = np.nan                        # not one that previous, next or self read
    got = sums(w, keys, same, after)
    assert np.isnan(got[1, 2]).all()
    keep = np.ones(got.shape[:2], bool)
    keep[1, 2] = False
    np.testing.assert_array_equal(got[keep], clean[keep])


def test_writable_read_only_and_strided_weights_share_one_compiled_loop_per_dtype():
    rng = np.random.default_rng(6)
    w = random_trace(rng, 2, 2, 5, False)                                                      # (L, H, T, T)
    keys, same, after = tables(rng, 5, 5)
    frozen = w.copy()
    frozen.flags.writeable = False                                     # as a trace kept by the app's cache is
    strided = np.asfortranarray(w)
    want = head_sums.sums(w, keys, same, after)
    for x in (frozen, strided, w.astype(np.float16)):
        np.testing.assert_allclose(head_sums.sums(x, keys, same, after), want,
                                   atol=1e-3 if x.dtype == np.float16 else 0, rtol=0)
    float32 = [s for s in head_sums._layer.signatures if s[0].dtype == head_sums.types.float32]
    assert len(float32) == 1 and float32[0][0].layout == "C" and not float32[0][0].mutable
