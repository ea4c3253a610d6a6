"""Minimal-pair analysis against hand-written alignments and a plain loop over heads and tokens."""
import numpy as np

from analysis.compare import align, aligned_difference, per_head, summed

A = ["[CLS]", "i", "sat", "on", "the", "river", "bank", "[SEP]"]
B = ["[CLS]", "i", "paid", "at", "the", "bank", "[SEP]"]


def _weights(n, seed):
    w = np.random.default_rng(seed).random((2, 3, n, n))
    return w / w.sum(-1, keepdims=True)


def test_align_pairs_equal_tokens_in_order():
    assert align(A, B) == [(0, 0), (1, 1), (4, 4), (6, 5), (7, 6)]
    assert align(["the", "x", "the"], ["the", "the"]) == [(0, 0), (2, 1)]
    assert align(["x"], ["y"]) == []


def test_difference_matches_a_plain_loop():
    wa, wb = _weights(len(A), 0), _weights(len(B), 1)
    pairs = align(A, B)
    chosen = [pairs[3], pairs[0]]  # bank and [CLS]
    diff = aligned_difference(wa, wb, chosen, pairs)
    for layer in range(2):
        for head in range(3):
            for p, (ka, kb) in enumerate(pairs):
                want = sum(wb[layer, head, qb, kb] - wa[layer, head, qa, ka] for qa, qb in chosen)
                assert np.isclose(diff[layer, head, p], want)
    size = per_head(diff, len(chosen))
    assert size.shape == (2, 3) and np.allclose(size, 0.25 * np.abs(diff).sum(-1))
    assert np.allclose(summed(wa, [2, 6]), wa[:, :, 2] + wa[:, :, 6])
    assert np.allclose(aligned_difference(wa, wa, [(6, 6)], [(k, k) for k in range(len(A))]), 0)
