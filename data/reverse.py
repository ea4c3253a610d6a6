"""Reversing random strings: a task whose inputs run long, to measure the fixed-context bottleneck.

`dataset(n, seed)` draws n (string, reversed) pairs of lowercase letters, lengths MIN_LEN..MAX_LEN
uniform; `by_length(per_length, seed)` draws the same number at every length for the accuracy chart;
`accuracy(predicted, expected)` scores them. It does not train or run a model.
"""
from __future__ import annotations

import random
import string

CHARS = string.ascii_lowercase
MIN_LEN, MAX_LEN = 4, 60


def random_string(rng: random.Random, length: int) -> str:
    """A string of `length` uniform lowercase letters, e.g. 'qzkd'."""
    return "".join(rng.choice(CHARS) for _ in range(length))


def dataset(n: int, seed: int | random.Random) -> list[tuple[str, str]]:
    """n pairs ('abcd', 'dcba') with lengths uniform in MIN_LEN..MAX_LEN, the same for the same seed; given a
    random.Random instead, drawn from it (the training script's stream of batches)."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    pairs = []
    for _ in range(n):
        s = random_string(rng, rng.randint(MIN_LEN, MAX_LEN))
        pairs.append((s, s[::-1]))
    return pairs


def by_length(per_length: int, seed: int) -> list[tuple[str, str]]:
    """per_length pairs at every length MIN_LEN..MAX_LEN, in order of length."""
    rng = random.Random(seed)
    pairs = []
    for length in range(MIN_LEN, MAX_LEN + 1):
        for _ in range(per_length):
            s = random_string(rng, length)
            pairs.append((s, s[::-1]))
    return pairs


def accuracy(predicted: list[str], expected: list[str]) -> tuple[float, float]:
    """(exact match, per-character accuracy) over pairs; a character counts if it is right at its
    position, so a missing or extra tail counts against the longer of the two. e.g. (['ab'], ['ac']) -> (0.0, 0.5)"""
    exact = sum(p == e for p, e in zip(predicted, expected)) / len(expected)
    right = sum(sum(a == b for a, b in zip(p, e)) for p, e in zip(predicted, expected))
    total = sum(max(len(p), len(e)) for p, e in zip(predicted, expected))
    return exact, right / total
