"""The built-in paraphrase task's data: 121 sentence pairs written for this app, and scrambled copies.

paraphrases.tsv holds (sentence, paraphrase) pairs, tab-separated. A scrambled copy of b has the same
words in a shuffled order: a bag of words cannot tell it from b, so it is the distractor that needs
attention (experiments/paraphrase.py scores models with it). No model code here.
"""
from __future__ import annotations

import random
from pathlib import Path

DATA = Path(__file__).parent / "paraphrases.tsv"


def load_pairs(path: Path = DATA) -> list[tuple[str, str]]:
    """[(sentence, paraphrase), ...] from a two-column tab-separated file."""
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(a.strip(), b.strip()) for a, b in rows]


def split(pairs: list, n_score: int, n_eval: int) -> tuple[list, list]:
    """Disjoint sets: every third pair scores importance, the others measure the metric.

    Keeping them apart means the importance order is not fitted to the sentences it is judged on.
    """
    score = [p for i, p in enumerate(pairs) if i % 3 == 0][:n_score]
    held = [p for i, p in enumerate(pairs) if i % 3 != 0][:n_eval]
    return score, held


def scramble(sentence: str, seed: int = 0) -> str:
    """The sentence's words in a different order, final full stop kept. 'A b c.' -> 'c A b.'"""
    words = sentence.rstrip(".").split()
    rng = random.Random(f"{seed}:{sentence}")
    shuffled = words[:]
    while len(set(words)) > 1 and shuffled == words:
        rng.shuffle(shuffled)
    return " ".join(shuffled) + "."
