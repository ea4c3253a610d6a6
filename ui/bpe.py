"""Cached pieces of the BPE view: the smallest vocabulary, a trained tokenizer with its merge table, a
corpus's word counts and MiniLM's WordPiece. The view draws; this module only computes and keeps."""
from __future__ import annotations

from collections import Counter

from analysis import bpe
from ui.runtime import cache


@cache.memo("results")
def smallest_vocab(corpus: tuple[str, ...], alphabet: str) -> int:
    return bpe.min_vocab_size(list(corpus), alphabet)


@cache.memo("results", spinner="Training BPE…")
def trained(corpus: tuple[str, ...], vocab_size: int, alphabet: str):
    tok = bpe.train_bpe(list(corpus), vocab_size, alphabet)
    return tok, bpe.merge_table(tok, list(corpus))


@cache.memo("results")
def corpus_words(corpus: tuple[str, ...]) -> Counter:
    return Counter(w for doc in corpus for w, _, _ in bpe.split_words(doc))


@cache.memo("models")
def wordpiece():
    return bpe.minilm_wordpiece()
