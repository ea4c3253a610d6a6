import numpy as np

from analysis.special import hide_special, present


def test_hide_special_drops_rows_and_columns_and_renormalises():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(5), size=(2, 3, 5)).astype(np.float32)  # (L, H, T, T)
    toks = ["[CLS]", "a", "b", "c", "[SEP]"]
    out, q, k = hide_special(w, toks, toks)
    assert q == k == ["a", "b", "c"] and out.shape == (2, 3, 3, 3)
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-6)
    kept = w[..., 1:4, 1:4]
    np.testing.assert_allclose(out, kept / kept.sum(-1, keepdims=True), rtol=1e-5)


def test_rows_with_nothing_left_stay_zero():
    w = np.zeros((1, 1, 2, 2), np.float32)
    w[0, 0, :, 0] = 1.0  # everything on [CLS]
    out, _, _ = hide_special(w, ["a", "b"], ["[CLS]", "x"])
    assert np.all(out == 0)


def test_present_names_the_special_tokens_a_sequence_holds():
    assert present(["[CLS]", "a", "[SEP]", "b", "[SEP]"]) == ["[CLS]", "[SEP]"]
    assert present(["<s>", "The", "Ġcat"]) == ["<s>"]                       # the built-in gpt: a BOS only
    assert present(["<pad>", "2", "0"], ["2", "3", "</s>"]) == ["<pad>", "</s>"]  # a seq2seq's two sides
    assert present(["the", "cat"]) == [] and present([]) == []
