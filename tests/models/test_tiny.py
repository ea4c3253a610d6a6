import numpy as np
import pytest
import torch

from models import load
from models.tiny import END, VOCAB, WEIGHTS, encode, read_weights
from train.tiny import CHECKS, HELDOUT_SEED, uniform_strings


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(1)
    return load("tiny")


def test_sorts_the_example_and_returns_causal_attention(tiny):
    tr = tiny.attend("31415")
    assert tr.output == "11345"
    assert tr.kind == "causal"
    assert tr.tokens == list("31415=11345") and tr.key_tokens == tr.tokens
    assert tr.weights.shape == (2, 4, 11, 11)
    assert np.abs(np.triu(tr.weights, k=1)).max() == 0
    np.testing.assert_allclose(tr.weights.sum(-1), 1, atol=1e-5)


def test_cached_weights_equal_one_uncached_forward_over_the_whole_sequence(tiny):
    tr = tiny.attend("9081726354")
    idx = torch.tensor([[VOCAB.index(t) for t in tr.tokens]])
    with torch.no_grad():
        _, atts = tiny.net(idx)  # no cache: every position at once
    full = torch.stack([a[0] for a in atts]).numpy()
    np.testing.assert_allclose(tr.weights, full, atol=1e-5)


@pytest.mark.parametrize("digits", ["31415", "0000000000", "9876543210", "5"])
def test_cached_and_uncached_generation_give_the_same_logits(tiny, digits):
    idx = torch.tensor([encode(digits)])
    out_c, logits_c, _ = tiny.net.generate(idx, max_new=11, use_cache=True)
    out_u, logits_u, _ = tiny.net.generate(idx, max_new=11, use_cache=False)
    assert torch.equal(out_c, out_u)
    torch.testing.assert_close(logits_c, logits_u, atol=1e-4, rtol=0)


def test_accuracy_on_held_out_and_hand_picked_strings(tiny):
    """Greedy generation through attend(), checked against Python's sorted(); the first 300 of the
    2,000 held-out strings (99.9 % allows at most one miss here) and every hand-picked string."""
    held = uniform_strings(torch.Generator().manual_seed(HELDOUT_SEED), 300)
    wrong = [s for s in held if tiny.attend(s).output != "".join(sorted(s))]
    assert len(wrong) <= 1, f"wrong on {wrong}"
    assert [s for s in CHECKS if tiny.attend(s).output != "".join(sorted(s))] == []


def test_recorded_accuracy_and_size():
    net, record = read_weights()
    assert record["heldout_exact"] >= 0.999 and record["heldout_n"] == 2000
    assert sum(p.numel() for p in net.parameters()) <= 2_000_000
    assert WEIGHTS.stat().st_size < 2 * 1024 * 1024


@pytest.mark.parametrize("text, words", [("hello", "only sorts digits"), ("12a", "31415"), ("", "digits"),
                                         ("12345678901", "at most 10")])
def test_bad_input_says_what_to_type(tiny, text, words):
    with pytest.raises(ValueError, match=words):
        tiny.attend(text)


def test_encode_ends_with_the_answer_marker():
    assert encode(" 3 1 ") == [3, 1, VOCAB.index("=")] and END == VOCAB.index(".")
