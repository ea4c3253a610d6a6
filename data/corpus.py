"""Corpora for "Heads across a corpus": the built-in sentences, or a person's .txt file or CSV column.

A Corpus is a name, a tuple of sentences and what the user should know about how it was read
(capped, cut, split). The built-in one is data/corpus/python_docs.txt (source and licence in
data/corpus/README.md), one sentence per line. An upload is read by data.text (UTF-8 only, byte
cap), split into sentences, each sentence cut at `max_chars` characters and the corpus at
`max_sentences`; the caps come from the caller. Nothing here runs a model.

    from_upload("notes.txt", b"It rains. We stay in.", max_bytes=10**6, max_sentences=100, max_chars=500)
    -> Corpus(name="notes.txt", sentences=("It rains.", "We stay in."), notices=())
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from data import text
from limits.errors import UserError

BUILTIN = Path(__file__).parent / "corpus" / "python_docs.txt"
BUILTIN_NAME = "Python documentation (built-in)"


@dataclass(frozen=True)
class Corpus:
    name: str
    sentences: tuple[str, ...]
    notices: tuple[str, ...] = ()
    shipped: bool = False  # the built-in corpus (not a person's text)
    folder: str = ""       # the result folder it was read from (python -m corpus_heads --out), else ""


def builtin(max_sentences: int | None = None) -> Corpus:
    """The shipped sentences, the first `max_sentences` of them when given."""
    lines = BUILTIN.read_text(encoding="utf-8").splitlines()
    return Corpus(BUILTIN_NAME, tuple(lines[:max_sentences]), shipped=True)


def from_lines(name: str, lines: list[str], max_sentences: int, max_chars: int) -> Corpus:
    """Lines -> sentences, each cut at max_chars, at most max_sentences; ValueError when nothing is left."""
    sentences = text.split_sentences(lines)
    if not sentences:
        raise UserError("This corpus has no text: upload a file with at least one sentence, or use the built-in one.")
    notices = []
    long = sum(len(s) > max_chars for s in sentences)
    if long:
        notices.append(f"{long:,} sentence(s) longer than {max_chars:,} characters were cut there.")
    if len(sentences) > max_sentences:
        notices.append(f"Used the first {max_sentences:,} sentences of {len(sentences):,}: "
                       f"one run is capped at {max_sentences:,}.")
    return Corpus(name, tuple(s[:max_chars] for s in sentences[:max_sentences]), tuple(notices))


def from_upload(name: str, data: bytes, *, max_bytes: int, max_sentences: int, max_chars: int,
                column: int | None = None) -> Corpus:
    """A .txt file (column None) or one column of a .csv file; ValueError with one sentence if unusable."""
    if column is None:
        lines, notice = text.read_upload(data, max_bytes)
    else:
        lines, notice = text.read_csv_column(data, column, max_bytes)
    corpus = from_lines(name, lines, max_sentences, max_chars)
    return Corpus(corpus.name, corpus.sentences, ((notice,) if notice else ()) + corpus.notices)
