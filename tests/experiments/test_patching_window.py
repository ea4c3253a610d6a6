"""A sliding-window decoder (a tiny random Mistral, 2 layers of 3-token windows) patched with texts that differ
further back than its windows carry to the last token: the refusal says so (not only that the two logit differences
are equal), and the claim holds: the model's own logits at the last token are the same for both texts. A change
within reach gets no such sentence."""
import pytest
import torch

import models
from bench.tiny_any import save
from experiments.patching import lined_up, patch_heads
from limits.errors import UserError


@pytest.fixture(scope="module")
def mistral(tmp_path_factory):
    return models.load("hf:" + save("mistral", "causal", tmp_path_factory.mktemp("window") / "mistral"))


def _last_logits(m, text: str) -> torch.Tensor:
    ids, _ = m.encode(text)
    with torch.no_grad():
        return m.model(input_ids=ids).logits[0, -1]


CLEAN = "abcdefghijkl"  # 13 tokens with the start token: character i is token i + 1, the last is token 12


def _changed(back: int) -> str:
    """CLEAN with the token `back` tokens before the last one changed."""
    i = 11 - back
    return CLEAN[:i] + "x" + CLEAN[i + 1:]


def test_a_change_out_of_the_windows_reach_is_named(mistral):
    assert mistral.windows == [3, 3]  # each window: the query and 2 tokens back; 2 layers carry 4 back
    for back in (5, 11):
        torch.testing.assert_close(_last_logits(mistral, CLEAN), _last_logits(mistral, _changed(back)), rtol=0,
                                   atol=0)
    with pytest.raises(UserError) as err:
        patch_heads(mistral, CLEAN, _changed(5), "a", "b")
    assert str(err.value) == ("The texts differ at token 7, 5 tokens before the last, and this model's sliding "
                              "windows (3 tokens in each of its 2 layers) carry at most 4 tokens back to the last one, "
                              "so the change cannot reach the answer: change one of the last 5 tokens.")
    twice = _changed(11)[:6] + "x" + _changed(11)[7:]  # tokens 1 and 7 changed, both out of reach
    with pytest.raises(UserError, match=r"^The texts differ first at token 1, 11 tokens before the last \(and last at "
                                        r"token 7\), and this model's sliding windows"):
        patch_heads(mistral, CLEAN, twice, "a", "b")


@pytest.mark.parametrize("corrupt", [_changed(4), _changed(11)[:10] + "x" + _changed(11)[11:]])  # 4 back; 11 and 1
def test_a_change_within_reach_is_patched(mistral, corrupt):
    assert not torch.equal(_last_logits(mistral, CLEAN), _last_logits(mistral, corrupt))
    out = patch_heads(mistral, CLEAN, corrupt, "a", "b")
    assert out.clean_diff != out.corrupt_diff


def test_a_pair_out_of_reach_does_not_line_up(mistral):
    """lined_up (which picks a model's example pair, and checks the pruning lab's pair, running nothing) refuses a pair
    the windows cannot carry, with the same sentence; a pair within reach lines up. The example pair the Patching view
    offers a sliding-window model is then one within reach."""
    from ui.patching import IOI, IOI_LETTERS, pair_for

    with pytest.raises(UserError, match="carry at most 4 tokens back"):
        lined_up(mistral, CLEAN, _changed(5), "a", "b")
    lined_up(mistral, CLEAN, _changed(4), "a", "b")
    # the letters' pair lines up in this character tokenizer, but its names differ far back: no longer offered
    with pytest.raises(UserError, match="carry at most 4 tokens back"):
        lined_up(mistral, IOI_LETTERS.clean, IOI_LETTERS.corrupt, IOI_LETTERS.answer, IOI_LETTERS.wrong)
    assert pair_for("hf:", mistral) is IOI  # none fits: the view says why in one sentence
