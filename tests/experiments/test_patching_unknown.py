"""An answer a word-level tokenizer does not know is refused with one sentence, not read as its unknown token (the
metric would then compare <unk> with the other answer): a tiny random GPT-2 with a word-level tokenizer
(tests.data.names_gpt2), loaded as models.load("hf:<folder>")."""
import pytest

import models
from experiments.patching import Runner, lined_up, patch_heads
from limits.errors import UserError
from tests.data import names_gpt2

CLEAN = "When Mary and John went to the store, John gave a drink to"
CORRUPT = "When Mary and John went to the store, Tom gave a drink to"


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return models.load("hf:" + names_gpt2.save(tmp_path_factory.mktemp("unknown") / "gpt2"))


def test_a_known_word_is_its_own_id_and_an_unknown_one_is_refused(gpt2):
    tok, runner = gpt2.tokenizer, Runner(gpt2)
    assert tok.encode(" Zebedee", add_special_tokens=False) == [tok.unk_token_id]  # what the fix guards against
    assert runner.index(" Mary", "answer") == tok.convert_tokens_to_ids("Mary") != tok.unk_token_id
    with pytest.raises(UserError) as err:
        runner.index(" Zebedee", "answer")
    assert str(err.value) == ("The answer ' Zebedee' is not in this tokenizer's vocabulary, so it would be read as "
                              "its unknown token <unk>: give a word it knows.")


@pytest.mark.parametrize(("answer", "wrong", "what"), [("Zebedee", "John", "answer"), ("Mary", "Zebedee", "wrong")])
def test_patching_refuses_a_pair_whose_answer_is_unknown(gpt2, answer, wrong, what):
    lined_up(gpt2, CLEAN, CORRUPT, " Mary", " John")  # the same pair with known names lines up
    for call in (lambda: lined_up(gpt2, CLEAN, CORRUPT, answer, wrong),
                 lambda: patch_heads(gpt2, CLEAN, CORRUPT, answer, wrong)):
        with pytest.raises(UserError, match=f"The {what} answer 'Zebedee' is not in this tokenizer's vocabulary"
                           if what == "wrong" else "The answer 'Zebedee' is not in"):
            call()
