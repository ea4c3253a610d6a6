import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from analysis.inside_head import EXPLAIN, checks, entropy_vs_dk, explain_steps, row_entropy, steps
from analysis.trace import HeadQKV
from models.toy import build


def random_head(T=6, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, 16, generator=g)
    return x.numpy(), *(torch.randn(T, d, generator=g).numpy() for _ in range(3))


@pytest.mark.parametrize("scale, causal", [(True, False), (False, False), (True, True), (False, True)])
def test_last_step_equals_torch_sdpa(scale, causal):
    x, q, k, v = random_head()
    r = steps(x, q, k, v, scale, causal)
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(t)[None] for t in (q, k, v)),
                                         is_causal=causal, scale=None if scale else 1.0)[0]
    np.testing.assert_allclose(r["A·V"], ref.numpy(), atol=1e-5)
    assert list(r) == list(EXPLAIN)


@pytest.mark.parametrize("causal", [False, True])
def test_the_code_shown_computes_the_steps(causal):
    """The torch lines the view shows, run as they are, give steps()'s panels; each names its panel in order."""
    x, *_ = random_head()
    w_q, w_k, w_v = (torch.randn(16, 8, generator=torch.Generator().manual_seed(i)) for i in range(3))
    x = torch.from_numpy(x)
    T, d_k = x.shape[0], 8
    future = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else torch.zeros(T, T, dtype=torch.bool)
    scope = {"torch": torch, "math": math, "x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "T": T, "d_k": d_k,
             "future": future}
    math_text, code = explain_steps()
    exec(code, scope)
    r = steps(x.numpy(), (x @ w_q).numpy(), (x @ w_k).numpy(), (x @ w_v).numpy(), True, causal)
    np.testing.assert_allclose(scope["a"].numpy(), r["softmax"], atol=1e-5)
    np.testing.assert_allclose(scope["z"].numpy(), r["A·V"], atol=1e-5)
    named = [line.split("# ")[1].split(":")[0] for line in code.splitlines()[:len(EXPLAIN)]]
    assert named == list(r) and math_text.count(r"\\") == len(EXPLAIN)


def test_a_models_own_steps_show_its_qk_norms_rope_and_window_and_still_compute_the_steps():
    """Where the model norms q and k, rotates them (RoPE) and masks beyond a sliding window, the lines shown say so
    and, run as they are with those functions, give the same panels as steps() on the model's own Q and K."""
    x, *_ = random_head()
    w_q, w_k, w_v = (torch.randn(16, 8, generator=torch.Generator().manual_seed(i)) for i in range(3))
    x = torch.from_numpy(x)
    T, d_k, window = x.shape[0], 8, 3
    norm = lambda t: t / t.norm(dim=-1, keepdim=True)  # noqa: E731  (unit rows: a norm without its scale)
    angle = torch.arange(T)[:, None] * 0.5                                                       # (T, 1)
    rope = lambda t: torch.cat([t[:, :4] * angle.cos() - t[:, 4:] * angle.sin(),  # noqa: E731
                                t[:, 4:] * angle.cos() + t[:, :4] * angle.sin()], dim=-1)     # (T, d_k)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    too_far = torch.ones(T, T, dtype=torch.bool).tril(-window)
    head = HeadQKV(tokens=["t"] * T, x=x.numpy(), q=x.numpy()[:, :8], k=x.numpy()[:, :8], v=x.numpy()[:, :8],
                   causal=True, rope=True, qk_norm=True, window=window)
    math_text, code = explain_steps(head)
    assert r"\mathrm{RoPE}(\mathrm{norm}_Q(X W_Q))" in math_text and rf"j \le i - {window}" in math_text
    assert "q = rope(norm_q(x @ w_q))" in code and "attn_mask=~(future | too_far)" in code
    scope = {"torch": torch, "math": math, "x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "T": T, "d_k": d_k,
             "future": future, "too_far": too_far, "norm_q": norm, "norm_k": norm, "rope": rope}
    exec(code, scope)
    q, k = rope(norm(x @ w_q)), rope(norm(x @ w_k))
    r = steps(x.numpy(), q.numpy(), k.numpy(), (x @ w_v).numpy(), True, True, window)
    np.testing.assert_allclose(scope["a"].numpy(), r["softmax"], atol=1e-5)
    np.testing.assert_allclose(scope["z"].numpy(), r["A·V"], atol=1e-5)
    assert explain_steps(HeadQKV(tokens=["t"], x=x.numpy()[:1], q=q.numpy()[:1], k=k.numpy()[:1],
                                 v=k.numpy()[:1])) == explain_steps()   # a plain head: the textbook lines


def test_the_toy_pages_final_output_equals_sdpa():
    head = build(d_model=16, heads=2, causal=True).head_qkv("the river bank was dirty again", 0, 1)
    r = steps(head.x, head.q, head.k, head.v, head.scale, head.causal)
    q, k, v = (torch.from_numpy(t)[None] for t in (head.q, head.k, head.v))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)[0]
    np.testing.assert_allclose(r["A·V"], ref.numpy(), atol=1e-5)


def test_named_steps_do_what_their_names_say():
    x, q, k, v = random_head()
    r = steps(x, q, k, v, scale=True, causal=True)
    np.testing.assert_allclose(r["QKᵀ"], q @ k.T, atol=1e-5)
    np.testing.assert_allclose(r["÷√d_k"], q @ k.T / math.sqrt(8), atol=1e-5)
    assert np.isneginf(r["mask"][np.triu_indices(6, k=1)]).all()
    assert np.isfinite(r["mask"][np.tril_indices(6)]).all()
    np.testing.assert_allclose(r["softmax"].sum(-1), 1, atol=1e-6)
    unscaled = steps(x, q, k, v, scale=False, causal=False)
    assert np.array_equal(unscaled["÷√d_k"], unscaled["QKᵀ"]) and np.array_equal(unscaled["mask"], unscaled["QKᵀ"])


def test_row_entropy_matches_the_formula():
    p = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])
    expected = [math.log(2), 0.0, -(0.2 * math.log(0.2) + 0.3 * math.log(0.3) + 0.5 * math.log(0.5))]
    np.testing.assert_allclose(row_entropy(p), expected)


def test_entropy_vs_dk_shows_the_variance_argument():
    r = entropy_vs_dk()
    np.testing.assert_allclose(r["var_unscaled"], r["d_k"], rtol=0.25)  # q·k has variance d_k
    np.testing.assert_allclose(r["var_scaled"], 1, rtol=0.25)
    assert r["entropy_unscaled"][-1] < 0.3 * r["entropy_scaled"][-1]  # unscaled rows collapse
    assert r["max_weight_unscaled"][-1] > 0.8
    assert np.ptp(r["entropy_scaled"]) < 0.3 and (r["entropy_scaled"] < r["max_entropy"]).all()


def test_checks_catch_a_wrong_output():
    x, q, k, v = random_head()
    head = HeadQKV(tokens=[str(i) for i in range(len(x))], x=x, q=q, k=k, v=v, scale=True, causal=False)
    r = steps(x, q, k, v)
    assert checks(head, r)["sdpa"] < 1e-5
    r["A·V"] = r["A·V"] + 1e-3
    assert checks(head, r)["sdpa"] > 1e-4
    assert "model" in checks(replace(head, model_weights=r["softmax"]), r)


def _head(scale=True, causal=False, window=None, T=6, d=8):
    x, q, k, v = random_head(T, d)
    return HeadQKV(tokens=[f"t{i}" for i in range(T)], x=x, q=q, k=k, v=v, scale=scale, causal=causal,
                   window=window)


def test_with_and_without_mask_are_the_two_softmaxes_of_steps_in_the_window():
    from analysis.inside_head import window, with_and_without_mask

    head = _head(causal=True, window=3)
    bidir, causal, note = with_and_without_mask(head, 1, 4)
    np.testing.assert_array_equal(bidir, window(steps(head.x, head.q, head.k, head.v, True, False, 3), 1, 4)["softmax"])
    np.testing.assert_array_equal(causal, window(steps(head.x, head.q, head.k, head.v, True, True, 3), 1, 4)["softmax"])
    above = np.triu_indices(4, 1)  # keys after their query
    assert bidir.shape == causal.shape == (4, 4) and np.all(causal[above] == 0) and np.all(bidir[above] > 0)
    assert "decoder" in note and "bidirectional" in with_and_without_mask(_head(), 0, 6)[2]


def test_one_score_is_the_cell_of_the_scaled_scores():
    from analysis.inside_head import one_score

    for scale in (True, False):
        head = _head(scale=scale, causal=True)
        q, k, score, note = one_score(head, 4, 1)
        np.testing.assert_allclose(score, steps(head.x, head.q, head.k, head.v, scale, False)["÷√d_k"][4, 1],
                                   rtol=1e-5)
        np.testing.assert_allclose(q * k, head.q[4].astype(np.float64) * head.k[1].astype(np.float64))
        assert "(4, 1)" in note and "after the query" not in note
    assert "after the query" in one_score(_head(causal=True), 1, 4)[3]


def test_notes_say_what_the_numbers_say():
    from analysis.inside_head import check_notes, scale_note, step_notes, window_note

    assert step_notes(_head(causal=True)) == []
    assert len(step_notes(_head(scale=False))) == 2 and "window of 3" in step_notes(_head(causal=True, window=3))[0]
    assert len(check_notes({"sdpa": 1e-7})) == 1 and "2.0e-06" in check_notes({"sdpa": 1e-7, "model": 2e-6})[1]
    assert "tokens 2–5" in window_note([f"t{i}" for i in range(10)], 2, 4)
    curves = entropy_vs_dk(d_ks=(1, 64), n_queries=64)
    assert f"{curves['var_unscaled'][-1]:.0f} at d_k = 64" in scale_note(curves)
