"""Tiled and block-sparse attention against torch's scaled_dot_product_attention, and proof that they skip work."""
import math

import pytest
import torch
import torch.nn.functional as F

from analysis import sparsity
from analysis.efficient import (
    block_layout,
    eager_attention,
    online_softmax_steps,
    sparse_attention,
    tiled_attention,
)
from experiments import attention_cost

LENGTHS = (1, 2, 3, 7, 31, 63, 64, 65, 100, 129, 200)


def qkv(T: int, S: int | None = None, B: int = 2, H: int = 3, d: int = 16, dv: int = 8, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    S = T if S is None else S
    return (torch.randn(B, H, T, d, generator=gen), torch.randn(B, H, S, d, generator=gen),
            torch.randn(B, H, S, dv, generator=gen))


@pytest.mark.parametrize("T", LENGTHS)
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_equals_sdpa_for_any_length(T, causal):
    q, k, v = qkv(T)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    for block in (1, 5, 16, 64) if T <= 65 else (5, 16, 64):  # below, around and above T
        out = tiled_attention(q, k, v, causal=causal, block=block)
        assert out.shape == ref.shape
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("T,S", [(5, 12), (64, 100), (70, 3)])
def test_tiled_with_more_or_fewer_keys_than_queries(T, S):
    q, k, v = qkv(T, S)
    for causal in (False, True):  # causal as SDPA has it: query i sees keys 0..i
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.testing.assert_close(tiled_attention(q, k, v, causal=causal, block=16), ref, atol=1e-5, rtol=0)


def test_tiled_survives_scores_that_overflow_a_naive_softmax():
    q, k, v = qkv(40)
    q = q * 30  # scores past 88: exp() overflows float32 without the running max
    assert torch.isinf(torch.exp(q @ k.transpose(-2, -1) / 4)).any()
    # scores this large carry float32 rounding of about 1e-5 each, so the truth is computed in float64
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double()).float()
    torch.testing.assert_close(tiled_attention(q, k, v, block=8), ref, atol=1e-4, rtol=0)


def test_tiled_never_forms_a_score_matrix_wider_than_its_block():
    """Every matmul and exp inside works on (T, block) at most: recorded by torch's profiler."""
    T, block = 256, 32
    q, k, v = qkv(T, B=1, H=1)
    with torch.profiler.profile(record_shapes=True) as prof:
        tiled_attention(q, k, v, block=block)
        tiled_attention(q, k, v, causal=True, block=block)
    shapes = [s for e in prof.events() if e.name in ("aten::bmm", "aten::exp", "aten::amax", "aten::mm")
              for s in e.input_shapes if s]
    assert shapes, "the profiler recorded no matmul or exp"
    assert all(not (len(s) >= 2 and s[-1] > block and s[-2] > block) for s in shapes), shapes


def masks_of_every_pattern(n: int) -> dict[str, torch.Tensor]:
    kw = dict(w=min(3, n - 1), dilation=1 if n < 7 else 2, block=min(4, n), every=1 if n < 8 else 2,
              globals_=tuple({0, n - 1}), n_random=min(2, n))
    return {name: sparsity.build(name, n, **kw) for name in sparsity.PATTERNS}


@pytest.mark.parametrize("T", (1, 2, 9, 64, 77, 150))
def test_sparse_equals_sdpa_with_each_patterns_mask(T):
    q, k, v = qkv(T)
    for name, mask in masks_of_every_pattern(T).items():
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        for block in (1, 8, 64) if T <= 64 else (8, 64):
            torch.testing.assert_close(sparse_attention(q, k, v, mask, block=block), ref, atol=1e-5, rtol=0,
                                       msg=f"{name} block {block}")


def test_sparse_equals_sdpa_with_a_random_rectangular_mask():
    q, k, v = qkv(50, 83)
    gen = torch.Generator().manual_seed(1)
    mask = torch.rand(50, 83, generator=gen) < 0.1
    mask[torch.arange(50), torch.arange(50)] = True
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    for block in (3, 16, 64):
        torch.testing.assert_close(sparse_attention(q, k, v, mask, block=block), ref, atol=1e-5, rtol=0)
        torch.testing.assert_close(sparse_attention(q, k, v, mask, block=block, layout=block_layout(mask, block)), ref,
                                   atol=1e-5, rtol=0)


def test_sparse_never_reads_the_key_blocks_its_mask_drops():
    """NaN in every key and value outside the kept tiles: dense-then-mask would return NaN, this does not."""
    T, block = 256, 32
    q, k, v = qkv(T, B=1, H=2)
    mask = sparsity.sliding_window(T, 8)
    layout = block_layout(mask, block)
    query_block = 0  # keeps key blocks 0 and 1; poison everything from block 2 on and check rows 0..31
    assert layout[query_block].tolist() == [True, True] + [False] * 6
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 2 * block:], v2[:, :, 2 * block:] = float("nan"), float("nan")
    out = sparse_attention(q, k2, v2, mask, block=block)[:, :, :block]
    assert torch.isfinite(out).all()
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)[:, :, :block]
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)
    assert torch.isnan(eager_attention(q, k2, v2, mask)[:, :, :block]).any()  # what dense-then-mask would give


def sparse_work(mask: torch.Tensor, block: int = 64) -> dict[str, int]:
    """Query-key pairs: kept by the mask, and scored by sparse_attention (every pair of its gathered tiles), read
    from the mask's block layout: the reference experiments.attention_cost's counts from the sizes alone agree with."""
    layout = block_layout(mask, block)
    T = mask.shape[0]
    return {"kept_pairs": int(mask.sum()), "scored_pairs": T * block * int(layout.sum(dim=1).max()),
            "dense_pairs": mask.numel()}


def test_sparse_scores_follow_the_kept_blocks_not_n_squared():
    mask = sparsity.sliding_window(4096, 128)
    work = sparse_work(mask, 64)
    assert work["kept_pairs"] == sparsity.pairs("sliding_window", 4096, w=128)
    assert work["scored_pairs"] == 4096 * 5 * 64  # the window spans at most 5 blocks of 64
    assert work["scored_pairs"] * 12 < work["dense_pairs"]
    # the cost sweep counts the same pairs from n alone (its FLOPs and its hosted bound rest on it)
    assert 4096 * attention_cost.keys_per_query("sliding_window", 4096) == work["scored_pairs"]


def test_block_layout_of_a_small_mask():
    eye = torch.eye(4, dtype=torch.bool)
    assert block_layout(eye, 2).tolist() == [[True, False], [False, True]]
    assert block_layout(torch.ones(5, 3, dtype=torch.bool), 2).shape == (3, 2)  # short last blocks count


@pytest.mark.parametrize("causal", [False, True])
def test_step_through_ends_on_the_exact_rows_and_is_exact_over_the_keys_seen_so_far(causal):
    gen = torch.Generator().manual_seed(3)
    T, d, block, qb = 13, 8, 4, 2
    q, k, v = (torch.randn(T, d, generator=gen) for _ in range(3))
    steps = online_softmax_steps(q, k, v, query_block=qb, block=block, causal=causal)
    rows = slice(qb * block, (qb + 1) * block)
    assert len(steps) == (3 if causal else 4)  # causal: key block 3 lies after these queries
    full = torch.ones(T, T, dtype=torch.bool).tril() if causal else torch.ones(T, T, dtype=torch.bool)
    for s in steps:
        seen = full.clone()
        seen[:, s.keys[1]:] = False  # exact attention over the keys folded in so far
        ref = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=seen)[0, rows]
        torch.testing.assert_close(s.out, ref, atol=1e-6, rtol=0)
        torch.testing.assert_close(s.alpha, torch.exp(s.m_prev - s.m))
        logits = (q[rows] @ k[: s.keys[1]].T / math.sqrt(d)).masked_fill(~seen[rows, : s.keys[1]], float("-inf"))
        torch.testing.assert_close(s.m, logits.amax(-1))
        torch.testing.assert_close(s.l, torch.exp(logits - s.m[:, None]).sum(-1), atol=1e-6, rtol=1e-6)
    assert torch.equal(steps[0].alpha, torch.zeros(block))  # m starts at -inf
    ref = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0, rows]
    torch.testing.assert_close(steps[-1].out, ref, atol=1e-6, rtol=0)


@pytest.mark.parametrize("call,message", [
    (lambda: online_softmax_steps(*torch.zeros(3, 5, 4), block=0), "block size must be 1 to 5"),
    (lambda: online_softmax_steps(*torch.zeros(3, 5, 4), block=6), "block size must be 1 to 5"),
    (lambda: online_softmax_steps(*torch.zeros(3, 5, 4), block=2, query_block=3), "blocks 0 to 2"),
    (lambda: tiled_attention(*qkv(4)[:2], torch.zeros(2, 3, 5, 8)), "do not fit together"),
    (lambda: tiled_attention(*qkv(4), block=0), "at least 1"),
    (lambda: tiled_attention(torch.zeros(4, 8), torch.zeros(4, 8), torch.zeros(4, 8)), "(batch, heads, tokens"),
    (lambda: sparse_attention(*qkv(4), torch.ones(4, 4)), "must be a boolean [4, 4]"),
    (lambda: sparse_attention(*qkv(4), torch.ones(3, 4, dtype=torch.bool)), "must be a boolean [4, 4]"),
    (lambda: sparse_attention(*qkv(4), torch.eye(4, dtype=torch.bool).flip(0) & False), "Query 0 may attend to no"),
    (lambda: sparse_attention(*qkv(4), torch.eye(4, dtype=torch.bool), block=2,
                              layout=torch.ones(1, 1, dtype=torch.bool)), "make it with block_layout"),
])
def test_bad_input_gets_one_sentence(call, message):
    with pytest.raises(ValueError, match=None) as err:
        call()
    assert message in str(err.value) and str(err.value).count(". ") == 0
