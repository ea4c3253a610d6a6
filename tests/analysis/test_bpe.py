"""analysis.bpe and analysis.bpe_teaching against the tokenizers library's own training and encoding."""
from __future__ import annotations

import random
import unicodedata

import pytest

from analysis import bpe, bpe_teaching

# letters the corpora below use, accented ones (composed and not), emoji, and characters no corpus has
POOL = list("abcdeilnorstu") + ["é", "ï", "ü", "e\u0301", "🙂", "👍🏽", "ß", "Ω", "中", "-", "'", "!"]


def random_words(rng: random.Random, n: int, pool=POOL, longest: int = 12) -> list[str]:
    return ["".join(rng.choices(pool, k=rng.randint(1, longest))) for _ in range(n)]


def random_corpus(seed: int, letters: str, lines: int = 40) -> list[str]:
    rng = random.Random(seed)
    words = random_words(rng, 30, list(letters), longest=7)
    return [" ".join(rng.choices(words, k=rng.randint(1, 12))) for _ in range(lines)]


@pytest.fixture(scope="module", params=bpe.ALPHABETS)
def trained(request):
    corpus = bpe.builtin_corpus() + random_corpus(0, "abcdeéü🙂")
    alphabet = request.param
    return bpe.train_bpe(corpus, bpe.min_vocab_size(corpus, alphabet) + 400, alphabet), alphabet


def test_last_step_is_the_encoding_and_segments_never_grow(trained):
    tok, _ = trained
    rng = random.Random(1)
    texts = random_words(rng, 300) + [" ".join(random_words(rng, 4)) for _ in range(50)]
    texts += ["unbelievably", "rebankable", "The river bank was dirty", "aaaaaaa", "naïve café 👍🏽!"]
    for text in texts:
        steps = bpe.merge_steps(tok, text)
        assert steps[-1] == tok.encode(text).tokens, text
        sizes = [len(s) for s in steps]
        assert all(b < a for a, b in zip(sizes, sizes[1:])), text  # every step merges at least once
        assert "".join(steps[0]) == "".join(steps[-1]) or bpe.UNK in steps[0]


def test_each_step_applies_the_named_rule_in_rank_order(trained):
    tok, _ = trained
    table = bpe.merge_table(tok)
    steps = bpe.merge_trace(tok, "the riverbank bankers were unbelievably rebankable")
    ranks = [s.rank for s in steps[1:]]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)
    for before, after in zip(steps, steps[1:]):
        rule = table[after.rank]
        assert after.merged and all(after.tokens[k] == rule.new for k in after.merged)
        assert sum(after.widths) == sum(before.widths)
        assert len(before.tokens) - len(after.tokens) == len(after.merged)


@pytest.mark.parametrize("alphabet", bpe.ALPHABETS)
@pytest.mark.parametrize("seed,letters,extra", [(0, "ab", 30), (1, "abc", 60), (2, "aeiklmnrst", 150),
                                                (3, "aé🙂üe\u0301", 40)])
def test_teaching_trainer_matches_tokenizers(alphabet, seed, letters, extra):
    corpus = random_corpus(seed, letters)
    vocab_size = bpe.min_vocab_size(corpus, alphabet) + extra
    tok = bpe.train_bpe(corpus, vocab_size, alphabet)
    words = [w for doc in corpus for w in bpe.pretokenize(tok, doc)]
    vocab, merges = bpe_teaching.train(words, vocab_size, bpe.initial_alphabet(corpus, alphabet),
                                       bpe.special_tokens(alphabet))
    table = bpe.merge_table(tok, corpus)
    assert vocab == tok.get_vocab()
    assert [(a, b) for a, b, _ in merges] == [(m.left, m.right) for m in table]
    assert [n for *_, n in merges] == [m.count for m in table]  # replayed counts equal recounted ones


def test_teaching_trainer_on_the_builtin_corpus():
    corpus = bpe.builtin_corpus()
    vocab_size = bpe.min_vocab_size(corpus) + 150
    tok = bpe.train_bpe(corpus, vocab_size)
    words = [w for doc in corpus for w in bpe.pretokenize(tok, doc)]
    vocab, merges = bpe_teaching.train(words, vocab_size, special_tokens=[bpe.UNK])
    assert vocab == tok.get_vocab()
    assert [(a, b, n) for a, b, n in merges] == [(m.left, m.right, m.count) for m in bpe.merge_table(tok, corpus)]


def test_teaching_helpers_match_their_examples():
    assert bpe_teaching.get_stats({("a", "a", "a"): 2}) == {("a", "a"): 4}
    assert bpe_teaching.merge(("a", "a", "a"), ("a", "a")) == ("aa", "a")
    assert bpe_teaching.merge(("a", "b", "a", "b"), ("a", "b")) == ("ab", "ab")


@pytest.mark.parametrize("corpus", [[], [""], ["   ", "\n\t"]])
def test_empty_corpus_says_what_to_do(corpus):
    with pytest.raises(ValueError, match="empty"):
        bpe.train_bpe(corpus, 300)


@pytest.mark.parametrize("alphabet", bpe.ALPHABETS)
def test_vocabulary_smaller_than_the_alphabet_is_refused(alphabet):
    corpus = bpe.builtin_corpus()
    smallest = bpe.min_vocab_size(corpus, alphabet)
    chars = {ch for doc in corpus for ch in unicodedata.normalize("NFC", doc) if not ch.isspace()}
    assert smallest == (256 if alphabet == "bytes" else len(chars) + 1)  # + [UNK]
    with pytest.raises(ValueError, match=f"at least {smallest}"):
        bpe.train_bpe(corpus, smallest - 1, alphabet)
    assert bpe.merge_table(bpe.train_bpe(corpus, smallest, alphabet)) == []


def test_unknown_alphabet_is_refused():
    with pytest.raises(ValueError, match="characters, bytes"):
        bpe.train_bpe(["abc"], 10, "words")


def test_characters_alphabet_normalises_accents_and_marks_unknown_characters():
    tok = bpe.train_bpe(["café naïve"] * 5, 40)
    assert tok.encode("cafe\u0301").tokens == tok.encode("café").tokens == ["café"]
    assert bpe.unknown_characters(tok, "café 🙂 zoo") == ["🙂", "z", "o"]
    assert bpe.merge_steps(tok, "🙂é")[0] == [bpe.UNK, "é"] == tok.encode("🙂é").tokens


def test_bytes_alphabet_encodes_any_text_without_loss():
    tok = bpe.train_bpe(bpe.builtin_corpus(), 600, "bytes")
    for text in ["naïve café 👍🏽 中文", "Zürich!!", "   spaces   "]:
        enc = tok.encode(text)
        assert b"".join(bpe.token_bytes(t) for t in enc.tokens) == text.encode()
        assert tok.decode(enc.ids) == text


def test_readable_byte_tokens():
    assert bpe.readable("ĠcafÃ©", "bytes") == "␣café" and bpe.readable("ĊĠ", "bytes") == "⏎␣"
    assert bpe.readable("ðŁ", "bytes") == "\\xf0\\x9f"


def test_compare_counts_and_pieces():
    tok = bpe.train_bpe(bpe.builtin_corpus(), 400)
    wp = bpe.minilm_wordpiece()
    text = "The café was unbelievably rebankable 🙂"
    counts, rows = bpe.compare(text, {"BPE": (tok, "characters"), "WordPiece": (wp, "")})
    assert counts["characters"] == len(text.replace(" ", ""))
    assert counts["BPE"] == len(tok.encode(text).tokens) == sum(r["BPE pieces"] for r in rows)
    assert counts["WordPiece"] == len(wp.encode(text, add_special_tokens=False).tokens)
    by_word = {r["word"]: r for r in rows}
    assert by_word["café"]["WordPiece"] == "cafe" and by_word["🙂"]["WordPiece"] == "[UNK]"
    pieces = by_word["unbelievably"]["WordPiece"].split(" · ")
    assert len(pieces) > 1 and all(p.startswith("##") for p in pieces[1:])
    assert "".join(by_word["unbelievably"]["BPE"].split(" · ")) == "unbelievably"


def test_trained_rows_and_word_counts_read_the_merge_table_as_the_view_shows_it():
    corpus = ("low lower lowest", "low low")
    tok, table = bpe.trained(corpus, bpe.min_vocab_size(list(corpus)) + 3)
    assert tok.to_str() == bpe.train_bpe(list(corpus), bpe.min_vocab_size(list(corpus)) + 3).to_str()
    rows = bpe.merge_rows(table, "characters")
    assert [r["rank"] for r in rows] == [0, 1, 2] and rows[0] == {"rank": 0, "pair": "l + o", "new token": "lo",
                                                                 "pair count": 5}
    assert bpe.merge_rows(bpe.trained(("é é",), 258, "bytes")[1], "bytes")[0]["new token"] == "é"  # bytes read back
    assert bpe.word_counts(corpus) == {"low": 3, "lower": 1, "lowest": 1}
