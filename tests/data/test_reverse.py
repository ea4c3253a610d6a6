from data import reverse


def test_pairs_are_reversals_within_the_length_range():
    pairs = reverse.dataset(500, seed=0)
    assert pairs == reverse.dataset(500, seed=0)
    assert all(t == s[::-1] for s, t in pairs)
    lengths = {len(s) for s, _ in pairs}
    assert min(lengths) == reverse.MIN_LEN and max(lengths) == reverse.MAX_LEN


def test_pairs_drawn_from_a_stream_are_the_pairs_the_training_script_drew_by_hand():
    """train/seq2seq.py draws its batches with dataset(n, rng): the same pairs, in the same order, as drawing each
    string's length then its letters from that rng (how the shipped weights were trained)."""
    import random

    rng, by_hand = random.Random(5), random.Random(5)
    for _ in range(3):  # one stream: consecutive draws continue it
        expected = [(s, s[::-1]) for s in (reverse.random_string(by_hand, by_hand.randint(reverse.MIN_LEN,
                                                                                          reverse.MAX_LEN))
                                           for _ in range(16))]
        assert reverse.dataset(16, rng) == expected


def test_by_length_covers_every_length_equally():
    pairs = reverse.by_length(3, seed=0)
    assert len(pairs) == 3 * (reverse.MAX_LEN - reverse.MIN_LEN + 1)
    assert [len(s) for s, _ in pairs[:6]] == [4, 4, 4, 5, 5, 5]


def test_accuracy_counts_positions_and_length_errors():
    assert reverse.accuracy(["ab"], ["ac"]) == (0.0, 0.5)
    assert reverse.accuracy(["abc", "xy"], ["abc", "x"]) == (0.5, 4 / 5)   # extra tail counts against
    assert reverse.accuracy(["dcba"], ["dcba"]) == (1.0, 1.0)
