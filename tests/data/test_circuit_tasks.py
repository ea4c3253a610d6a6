"""The names task (indirect object identification, ABC corruption) on a tiny random GPT-2 with a word-level tokenizer
loaded as models.load("hf:<folder>"): the pairs' structure, tokens lining up, seeding, which names it uses, and the
one sentence where it cannot be offered."""
import re

import pytest

import models
from data import circuit_tasks as tasks
from experiments import patching
from experiments.circuits_task import names_offered, names_pairs
from tests.data import names_gpt2

SENTENCE = re.compile(r"(?:When|After|While|Then,) (\w+) and (\w+) .* (\w+) gave a \w+ to")


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return models.load("hf:" + names_gpt2.save(tmp_path_factory.mktemp("names") / "gpt2"))


def test_pairs_name_the_subject_twice_and_the_corrupted_text_a_third_person(gpt2):
    pairs = names_pairs(gpt2, 16)
    assert len(pairs) == len(set(pairs)) == 16
    for clean, corrupt, answer, wrong in pairs:
        a, b, s = SENTENCE.fullmatch(clean).groups()
        a2, b2, c = SENTENCE.fullmatch(corrupt).groups()
        io = ({a, b} - {s}).pop()
        assert s in (a, b) and a != b and (answer, wrong) == (" " + io, " " + s)
        assert (a2, b2) == (a, b) and c not in (a, b) and corrupt == clean[::-1].replace(s[::-1], c[::-1], 1)[::-1]
        assert {a, b, c} <= set(names_gpt2.NAMES)  # only the names this tokenizer reads as one token
    assert {SENTENCE.fullmatch(c).group(1) == a[1:] for c, _, a, _ in pairs} == {True, False}  # both orders


def test_pairs_line_up_token_by_token_and_differ_at_one_token(gpt2):
    for clean, corrupt, answer, wrong in names_pairs(gpt2, 16):
        a, b = patching.token_ids(gpt2, clean), patching.token_ids(gpt2, corrupt)
        assert len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1
        assert gpt2.tokenizer.unk_token_id not in a + b
        patching.lined_up(gpt2, clean, corrupt, answer, wrong)


def test_the_same_seed_gives_the_same_pairs_and_another_seed_others(gpt2):
    assert names_pairs(gpt2, 8) == names_pairs(gpt2, 8) == names_pairs(gpt2, 12)[:8]
    assert names_pairs(gpt2, 8, seed=1) != names_pairs(gpt2, 8)


def test_pairs_that_do_not_line_up_are_not_produced():
    one = {" " + n for n in tasks.FIRST_NAMES[:5]}.__contains__
    count = lambda text: len(text.split()) + text.count("James")  # noqa: E731  'James' is two tokens in its text
    pairs = tasks.names(40, one, count)
    assert pairs and all(count(c) == count(k) for c, k, _, _ in pairs)
    assert all(("James" in c) == ("James" in k) for c, k, _, _ in pairs)
    unchecked = tasks.names(40, one, lambda text: len(text.split()))
    assert any(("James" in c) != ("James" in k) for c, k, _, _ in unchecked)  # such pairs come up when not counted


def test_too_few_one_token_names_is_one_sentence_and_the_builtins_are_not_offered():
    with pytest.raises(ValueError, match=r"at least 4 first names .* reads 3"):
        tasks.names(4, {" Mary", " John", " Tom"}.__contains__, len)
    for key in ("gpt", "induction", "tiny"):
        assert not names_offered(models.load(key))


def test_the_date_models_pairs_answer_with_its_own_first_written_digit():
    """years(): on every clean source `seq2seq-transformer` writes the answer first, on every corrupted one the wrong
    answer; the two sources differ only in the year's first two digits, as many characters (tokens)."""
    from data.dates import parse

    m = models.load("seq2seq-transformer")
    pairs = tasks.years(32)
    assert pairs == tasks.years(40)[:32] and tasks.years(32, seed=1) != pairs and len(set(pairs)) == 32
    assert tasks.BUILT_IN["seq2seq-transformer"][0] is tasks.years
    assert [a for _, _, a, _ in pairs[:4]] == ["2", "1", "2", "1"]
    for clean, corrupt, answer, wrong in pairs:
        assert len(clean) == len(corrupt) and [i for i, (x, y) in enumerate(zip(clean, corrupt)) if x != y] == \
            [len(clean) - 4, len(clean) - 3]
        assert parse(clean)[:4] == str(int(parse(corrupt)[:4]) + (100 if answer == "2" else -100))
        assert (m.attend(clean).output[0], m.attend(corrupt).output[0]) == (answer, wrong)
        patching.lined_up(m, clean, corrupt, answer, wrong)
