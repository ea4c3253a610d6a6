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


def test_words_cut_into_pieces_align_as_words():
    from tokenizers import Tokenizer

    import models
    from analysis.compare import align_words

    tok = Tokenizer.from_file(str(models.builtin_folder("gpt") / "tokenizer.json"))
    ta, tb = (tok.encode(s).tokens for s in ("I sat on the river bank", "I paid at the bank"))
    pairs = align_words(ta, tb)
    bank = next(p for p in pairs if p[0] == "bank")
    assert len(bank[1]) > 1 and "".join(ta[i] for i in bank[1]).lstrip("Ġ") == "bank"  # a word of pieces
    assert [p[0] for p in pairs if p[0] not in ("<s>", "</s>")] == ["I", "the", "bank"]
    assert not any(p[0] in ("k", "an", "b") for p in pairs)  # never a piece as if it were the word


def test_a_word_of_pieces_is_averaged_as_a_query_and_summed_as_a_key():
    wa, wb = _weights(6, 2), _weights(5, 3)
    word_a, word_b = [3, 4, 5], [2, 3, 4]  # the same word, three pieces in each sentence
    keys = [([0], [0]), ([1, 2], [1])]      # a key word of two pieces in A, one in B
    diff = aligned_difference(wa, wb, [(word_a, word_b)], keys)
    for layer in range(2):
        for head in range(3):
            ra = sum(wa[layer, head, q] for q in word_a) / 3
            rb = sum(wb[layer, head, q] for q in word_b) / 3
            want = [rb[0] - ra[0], rb[1] - (ra[1] + ra[2])]
            assert np.allclose(diff[layer, head], want)
    assert np.allclose(summed(wa, [word_a]).sum(-1), 1.0)  # one distribution per word
