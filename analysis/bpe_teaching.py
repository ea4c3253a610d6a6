"""Byte pair encoding training in plain Python, short enough to read in one screen.

Given pre-tokenised words (strings) it learns merges the way `tokenizers`' BpeTrainer does:
start from single characters, count every adjacent pair weighted by word frequency, merge the
most frequent pair (ties go to the pair of oldest tokens, i.e. lowest ids), repeat until the
vocabulary is full or no pair is left. Tests check that vocab and merges equal the library's.
It does not normalise, pre-tokenise or encode text (analysis.bpe does, with `tokenizers`), and it
is slow on purpose: it recounts every pair after every merge, so keep it to small corpora.
"""
from __future__ import annotations

from collections import Counter


def get_stats(words: dict[tuple[str, ...], int]) -> Counter:
    """Adjacent pair counts weighted by word count: {('a','a','a'): 2} -> {('a','a'): 4}"""
    stats = Counter()
    for symbols, n in words.items():
        for pair in zip(symbols, symbols[1:]):
            stats[pair] += n
    return stats


def spans(symbols: tuple[str, ...], pair: tuple[str, str]) -> list[tuple[int, int]]:
    """Where each symbol after merging pair, left to right, came from: ('a','a','a'), ('a','a') -> [(0, 2), (2, 3)]"""
    out, i = [], 0
    while i < len(symbols):
        width = 2 if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair else 1
        out.append((i, i + width))
        i += width
    return out


def merge(symbols: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    """Replace each occurrence of pair, left to right: ('a','a','a'), ('a','a') -> ('aa','a')"""
    return tuple("".join(symbols[a:b]) for a, b in spans(symbols, pair))


def train(words, vocab_size: int, alphabet=(), special_tokens=()):
    """Learn merges from an iterable of pre-tokenised words.

    Returns (vocab {token: id}, merges [(left, right, count)]) where count is the pair's count when
    it was merged. Ids: special tokens first, then the alphabet (the given one plus every character
    seen) in code point order, then merged tokens in the order they were made.
    """
    counts = Counter(words)
    vocab = {token: i for i, token in enumerate(special_tokens)}
    for ch in sorted(set(alphabet) | {ch for word in counts for ch in word}):
        vocab.setdefault(ch, len(vocab))
    words = {tuple(word): n for word, n in counts.items()}
    merges = []
    while len(vocab) < vocab_size:
        stats = get_stats(words)
        if not stats:
            break
        pair = max(stats, key=lambda p: (stats[p], -vocab[p[0]], -vocab[p[1]]))
        merges.append((pair[0], pair[1], stats[pair]))
        vocab.setdefault(pair[0] + pair[1], len(vocab))  # a token made twice keeps its first id
        words = {merge(symbols, pair): n for symbols, n in words.items()}
    return vocab, merges
