"""Generated one-line reviews with a sentiment label that needs word order: "the meal was not bad" -> positive.

    rows(3, seed=0) -> [{"text": "honestly the film was not good", "label": "negative"}, ...]

The label is the adjective's sentiment, flipped by a "not" or "never" before it: a bag of words cannot
read it (the same words occur in both classes), so a classifier trained on it needs attention between
the negation and the adjective. Small closed vocabulary (WORDS), so a word-level tokenizer covers it.
Used to build small classifiers for tests and the benchmark; no model code here.
"""
from __future__ import annotations

import random

LABELS = ("negative", "positive")
NOUNS = ("film", "meal", "room", "staff", "book", "song", "game", "trip", "hotel", "show")
GOOD = ("good", "great", "fine", "lovely", "superb", "pleasant")
BAD = ("bad", "awful", "poor", "dull", "terrible", "boring")
INTENSIFIERS = ("", "really", "quite", "very", "so")
OPENERS = ("", "honestly", "i think", "overall", "to be fair", "sadly", "happily")
NEGATIONS = ("not", "never")
WORDS = sorted({w for part in (NOUNS, GOOD, BAD, INTENSIFIERS, OPENERS, NEGATIONS, ("the", "was", "and"))
                for phrase in part for w in phrase.split()})


def rows(n: int, seed: int = 0) -> list[dict[str, str]]:
    """n labelled rows from a seeded generator; about half of them negated, classes balanced."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        good, negated = rng.random() < 0.5, rng.random() < 0.5
        words = [rng.choice(OPENERS), "the", rng.choice(NOUNS), "was", rng.choice(NEGATIONS) if negated else "",
                 rng.choice(INTENSIFIERS), rng.choice(GOOD if good else BAD)]
        out.append({"text": " ".join(w for w in words if w), "label": LABELS[int(good != negated)]})
    return out
