"""Sparse patterns against their definitions written as loops, counts against brute force, reach against products."""
import itertools

import numpy as np
import pytest
import torch

from analysis import sparsity as sp


def by_loops(name: str, n: int, w=2, dilation=2, block=4, band=0, every=0, globals_=(0,)) -> np.ndarray:
    """Each deterministic pattern from its definition, one pair at a time."""
    keep = np.zeros((n, n), dtype=bool)
    for i, j in itertools.product(range(n), range(n)):
        bi, bj = i // block, j // block
        keep[i, j] = {
            "dense": True, "causal": j <= i, "sliding_window": abs(i - j) <= w,
            "dilated_window": abs(i - j) <= w * dilation and (i - j) % dilation == 0,
            "block_sparse": abs(bi - bj) <= band or (every > 0 and every - 1 in (bi % every, bj % every)),
            "longformer": abs(i - j) <= w or i in globals_ or j in globals_,
        }[name]
    return keep


@pytest.mark.parametrize("n", [1, 2, 5, 12, 17])
def test_deterministic_patterns_match_their_definitions(n):
    for name in ("dense", "causal", "sliding_window", "dilated_window", "block_sparse", "longformer"):
        for w, dilation, block, band, every in itertools.product((0, 3), (1, 2), (1, 5), (0, 1), (0, 2)):
            kw = dict(w=w, dilation=dilation, block=block, band=band, every=every, globals_=tuple({0, n // 2}))
            try:
                mask = sp.build(name, n, **kw)
            except ValueError:
                continue
            assert np.array_equal(mask.numpy(), by_loops(name, n, **kw)), (name, n, kw)


# each pattern's own knobs, with values inside and outside the sequences below
KNOBS = {
    "dense": {}, "causal": {},
    "sliding_window": {"w": (0, 1, 4, 40)},
    "dilated_window": {"w": (0, 1, 4), "dilation": (1, 3)},
    "block_sparse": {"block": (1, 4, 7, 40), "band": (0, 2), "every": (0, 1, 3)},
    "longformer": {"w": (0, 2, 40), "globals_": ((), (0,), (0, 5, 6))},
    "bigbird": {"w": (0, 2), "globals_": ((), (0,), (0, 5, 6)), "n_random": (0, 3, 40)},
}


def test_counts_from_formulas_equal_brute_force():
    checked = refused = 0
    for n in (1, 2, 3, 7, 16, 33):
        for name, knobs in KNOBS.items():
            for values in itertools.product(*knobs.values()):
                kw = dict(zip(knobs, values))
                try:
                    mask = sp.build(name, n, **kw)
                except ValueError:
                    with pytest.raises(ValueError):
                        sp.pairs(name, n, **kw)
                    refused += 1
                    continue
                assert sp.pairs(name, n, **kw) == int(mask.sum()), (name, n, kw)
                assert mask.diagonal().all()
                checked += 1
    assert checked > 150 and refused > 50


def test_bigbird_keeps_window_and_globals_and_draws_exactly_its_random_keys():
    n, w, g, r = 40, 2, 2, 3
    mask = sp.bigbird(n, w, g, r, seed=7)
    base = sp.longformer(n, w, range(g))
    assert (mask >= base).all()  # window and globals kept
    extra = (mask & ~base).sum(dim=1)  # random keys per query
    assert extra[:g].sum() == 0 and (extra[g:] == r).all()
    assert torch.equal(mask, sp.bigbird(n, w, g, r, seed=7)) and not torch.equal(mask, sp.bigbird(n, w, g, r, seed=8))


def matrix_power_reach(mask: torch.Tensor, layers: int) -> list[np.ndarray]:
    """The independent path: repeated boolean matrix products (as float64 counts, then > 0)."""
    m = mask.double()
    out, acc = [], m.clone()
    for _ in range(layers):
        out.append((acc > 0).numpy())
        acc = (acc @ m).clamp(max=1.0)
    return out


@pytest.mark.parametrize("n", [1, 9, 40, 130])
def test_receptive_field_equals_repeated_boolean_products(n):
    for name in sp.PATTERNS:
        mask = sp.build(name, n, w=min(1, n - 1), dilation=1, block=min(3, n), every=0, globals_=(0,),
                        n_random=min(1, n))
        reach = sp.receptive_field(mask, 6)
        assert len(reach) == 6
        for got, want in zip(reach, matrix_power_reach(mask, 6)):
            assert np.array_equal(got, want), name


def test_a_window_reaches_w_more_tokens_each_layer_and_a_global_token_joins_all_in_two():
    n, w = 30, 2
    reach = sp.receptive_field(sp.sliding_window(n, w), 5)
    for layer, r in enumerate(reach, start=1):
        assert np.array_equal(r, sp.sliding_window(n, min(layer * w, n - 1)).numpy())
    assert sp.full_reach_layer(reach) is None
    assert sp.full_reach_layer(sp.receptive_field(sp.longformer(n, 1, (7,)), 3)) == 2
    assert sp.full_reach_layer(sp.receptive_field(sp.dense(n), 1)) == 1


@pytest.mark.parametrize("call,message", [
    (lambda: sp.sliding_window(5, 5), "The window reaches 5 tokens to each side, outside the 5 tokens: choose a "
                                      "window of 0 to 4."),
    (lambda: sp.sliding_window(5, -1), "choose a window of 0 to 4"),
    (lambda: sp.dilated_window(10, 4, 3), "A window of 4 with dilation 3 reaches 12 tokens"),
    (lambda: sp.dilated_window(10, 1, 0), "dilation must be a whole number"),
    (lambda: sp.block_sparse(6, 7), "A block of 7 tokens does not fit in the 6 tokens: choose 1 to 6."),
    (lambda: sp.block_sparse(6, 0), "choose 1 to 6"),
    (lambda: sp.block_sparse(6, 2, band=3), "A band of 3 blocks is outside the 3 blocks of 2 tokens"),
    (lambda: sp.block_sparse(6, 2, every=4), "A global block every 4 blocks does not fit in 3 blocks"),
    (lambda: sp.longformer(6, 1, (0, 6)), "Global token 6 is outside the 6 tokens: choose positions 0 to 5."),
    (lambda: sp.longformer(6, 1, (-1,)), "Global token -1 is outside"),
    (lambda: sp.bigbird(4, 1, 5), "5 global tokens do not fit in the 4 tokens"),
    (lambda: sp.bigbird(4, 1, 1, 9), "9 random keys per query do not fit"),
    (lambda: sp.build("star", 4), "Unknown pattern 'star'"),
    (lambda: sp.dense(0), "at least one token"),
    (lambda: sp.parse_globals("0, x"), "Global tokens are positions separated by commas"),
    (lambda: sp.parse_globals("<script>alert(1)</script>"), "such as 0, 5"),
    (lambda: sp.receptive_field(sp.dense(3), 0), "at least one layer"),
])
def test_bad_choices_get_one_sentence(call, message):
    with pytest.raises(ValueError) as err:
        call()
    text = str(err.value)
    assert message in text and text.endswith(".") and text.count(": ") <= 1 and len(text) < 200


def test_parse_globals_reads_positions():
    assert sp.parse_globals("0, 5 7,") == [0, 5, 7]
    assert sp.parse_globals("  ") == []
