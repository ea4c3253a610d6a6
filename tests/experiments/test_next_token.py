"""The next token: logits equal model(...).logits, each step's filtered probabilities are next_token_probs, greedy
steps equal transformers' generate, seeded sampling is reproducible however the steps are split, and past the
context gets a sentence."""
import numpy as np
import pytest
import torch

import models
from analysis.sampling import next_token_probs
from experiments.logit_lens import encode
from experiments.next_token import Settings, extend, last_logits, stages


@pytest.fixture(scope="module")
def gpt():
    return models.load("gpt")


def test_logits_equal_the_models_own(gpt):
    ids, _ = encode(gpt, "import os\nos.path.")
    assert gpt.next_token_model is gpt.model
    with torch.no_grad():
        ref = gpt.model(ids).logits[0, -1].numpy()
    assert np.array_equal(last_logits(gpt, ids), ref)
    tiny = models.load("tiny")
    tids, _ = encode(tiny, "31415")
    with torch.no_grad():
        assert np.array_equal(last_logits(tiny, tids), tiny.net(tids)[0][0, -1].numpy())


def test_greedy_steps_equal_generate(gpt):
    ids, _ = encode(gpt, "def f(x):")
    steps = extend(gpt, ids, 6, Settings(sample=False))
    with torch.no_grad():
        ref = gpt.model.generate(ids, max_new_tokens=6, do_sample=False, num_beams=1, pad_token_id=0)[0, ids.shape[1]:]
    assert [s.id for s in steps] == ref.tolist()
    assert [s.position for s in steps] == list(range(ids.shape[1], ids.shape[1] + 6))


def test_seeded_sampling_is_reproducible_and_uses_the_filtered_probabilities(gpt):
    ids, _ = encode(gpt, "def f(x):")
    s = Settings(temperature=1.3, top_k=50, top_p=0.95, seed=7)
    a = extend(gpt, ids, 6, s)
    first = extend(gpt, ids, 3, s)
    rest = extend(gpt, torch.cat([ids, torch.tensor([[c.id for c in first]])], 1), 3, s)
    assert [c.id for c in a] == [c.id for c in first + rest]
    probs = next_token_probs(last_logits(gpt, ids), 1.3, 50, 0.95)
    assert a[0].prob == pytest.approx(probs[a[0].id], abs=1e-6) and probs[a[0].id] > 0


def test_stages_and_limits(gpt):
    ids, _ = encode(gpt, "def f(x):")
    st = stages(last_logits(gpt, ids), Settings(top_k=3, top_p=0.5))
    assert (st["top-k"][3:] == 0).all() and st["top-p"][0] >= st["top-k"][0]
    assert stages(last_logits(gpt, ids), Settings(temperature=0))["top-p"][0] == 1.0
    with pytest.raises(ValueError, match="positions"):
        extend(gpt, ids, 200, Settings())
    tiny = models.load("tiny")
    tids, _ = encode(tiny, "31415")
    assert "".join(c.token for c in extend(tiny, tids, 6, Settings(sample=False))) == "11345."


def test_a_model_without_a_language_model_head_is_told_so():
    """An encoder loaded without a head has no next-token logits: a sentence, not "'NoneType' is not callable"."""
    from limits.errors import UserError

    bert = models.load("bert")
    ids = bert.tokenizer("a cat", return_tensors="pt")["input_ids"]
    with pytest.raises(UserError, match="holds no language-model head"):
        last_logits(bert, ids)
