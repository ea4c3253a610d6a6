"""Attributions against paths written here: autograd for gradient × input, the model's own forward for IG's end
points and occlusion, and ERASER comprehensiveness of a ranking by the true effect against random."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import models
from data import reviews
from experiments.attribution import attribute, faithfulness
from experiments.explained import NO_PREDICTION, TOO_SHORT, explain
from experiments.faithfulness import FRACTIONS, erasure, top


@pytest.fixture(scope="module")
def clf(classifier):
    return models.load("hf:" + str(classifier[0]))  # its classifier kept: the class is what is explained


@pytest.fixture(scope="module")
def bert():
    from models import load

    return load("bert")


def _logits(tm, text: str) -> torch.Tensor:
    """The classifier's logits by its own forward on the tokenised text (no embeddings of ours)."""
    with torch.no_grad():
        return tm.task(**tm.tokenizer(text, return_tensors="pt")).logits[0]


def test_grad_x_input_equals_autograd_on_minilm_similarity(bert, one_thread):
    text, other = "The river bank was muddy after the rain", "The shore was dirty"
    tok, net = bert.tokenizer, bert.model
    enc, enc_b = tok(text, return_tensors="pt"), tok(other, return_tensors="pt")
    with torch.no_grad():
        e_b = net(**enc_b).last_hidden_state[0].mean(0)                                   # (D,)
    x = net.embeddings.word_embeddings.weight[enc["input_ids"][0]].detach()[None].clone().requires_grad_()  # (1, T, D)
    pooled = net(inputs_embeds=x, attention_mask=enc["attention_mask"]).last_hidden_state[0].mean(0)  # (D,)
    cos = F.cosine_similarity(pooled, e_b, dim=0)
    (g,) = torch.autograd.grad(cos, x)
    want = (g * x).sum(-1)[0].detach().numpy()                                             # (T,)
    a = attribute(bert, text, "grad_x_input", text_b=other)
    assert a.tokens == tok.convert_ids_to_tokens(enc["input_ids"][0])
    assert a.output == pytest.approx(cos.item(), abs=1e-6)
    np.testing.assert_allclose(a.scores, want, atol=1e-6)
    assert np.abs(want).max() > 1e-3  # not a vacuous zero


def test_grad_x_input_of_a_classifier_logit(clf, one_thread):
    text = "honestly the film was not good"
    pred = int(_logits(clf, text).argmax())
    ids = clf.tokenizer(text, return_tensors="pt")["input_ids"]
    x = clf.task.get_input_embeddings().weight[ids[0]].detach()[None].clone().requires_grad_()   # (1, T, D)
    z = clf.task(inputs_embeds=x).logits[0, pred]
    (g,) = torch.autograd.grad(z, x)
    a = attribute(clf, text, "grad_x_input")
    assert a.target == clf.task.config.id2label[pred] == reviews.LABELS[0]
    np.testing.assert_allclose(a.scores, (g * x).sum(-1)[0].detach().numpy(), atol=1e-5)


def test_integrated_gradients_is_complete_and_its_end_points_are_the_model_s(clf, one_thread):
    text = "to be fair the hotel was not pleasant"
    a = attribute(clf, text, "integrated_gradients", steps=256)  # this small classifier's path bends sharply
    logits = _logits(clf, text)
    pred = int(logits.argmax())
    assert a.output == pytest.approx(float(logits[pred]), abs=1e-5)
    enc = clf.tokenizer(text, return_tensors="pt")
    special = torch.tensor(clf.tokenizer.get_special_tokens_mask(enc["input_ids"][0].tolist(),
                                                                 already_has_special_tokens=True)).bool()
    padded = enc["input_ids"].masked_fill(~special[None], clf.tokenizer.pad_token_id)    # the "pad" baseline by ids
    with torch.no_grad():
        base = float(clf.task(input_ids=padded).logits[0, pred])
    assert a.baseline_output == pytest.approx(base, abs=1e-5)
    gap = a.output - a.baseline_output
    assert abs(a.scores.sum() - gap) <= 0.01 * abs(gap)
    assert a.delta == pytest.approx(a.scores.sum() - gap, abs=1e-5)
    assert np.all(a.scores[special.numpy()] == 0)


def test_integrated_gradients_completeness_error_shrinks_as_the_steps_grow(clf, one_thread):
    """On the shipped classifier the path bends sharply: 16 steps miss the gap by tens of per cent, 256 by little
    (a property of the Riemann sum, not of this CPU: the weights are shipped, not trained in the session)."""
    for text in ("the film was not good", "i think the song was really awful", "to be fair the hotel was not pleasant"):
        errors = []
        for steps in (16, 256):
            a = attribute(clf, text, "integrated_gradients", steps=steps)
            errors.append(abs(a.scores.sum() - (a.output - a.baseline_output)) / abs(a.output - a.baseline_output))
        assert errors[1] < errors[0] / 10 and errors[1] <= 0.05, (text, errors)


def test_integrated_gradients_on_minilm_is_complete_at_the_default_steps(bert, one_thread):
    a = attribute(bert, "The river bank was muddy after the rain", "integrated_gradients", text_b="The shore was dirty")
    gap = a.output - a.baseline_output
    assert abs(gap) > 0.1 and abs(a.scores.sum() - gap) <= 0.01 * abs(gap)


def test_occlusion_equals_deleting_each_word_by_hand(clf):
    words = "to be fair the hotel was not pleasant".split()
    text = " ".join(words)
    logits = _logits(clf, text)
    pred = int(logits.argmax())
    a = attribute(clf, text, "occlusion")
    assert a.tokens[1:-1] == words  # a word-level tokenizer: one token per word, [CLS] and [SEP] around
    by_hand = [float(logits[pred] - _logits(clf, " ".join(words[:i] + words[i + 1:]))[pred]) for i in range(len(words))]
    np.testing.assert_allclose(a.scores[1:-1], by_hand, atol=1e-5)
    assert a.scores[0] == a.scores[-1] == 0


def test_a_ranking_by_true_effect_is_more_comprehensive_than_random(clf):
    texts = [r["text"] for r in reviews.rows(30, seed=7)]
    true_c, rand_c = [], []
    rng = np.random.default_rng(0)
    for text in texts:
        words = text.split()
        probs = torch.softmax(_logits(clf, text), -1)
        pred = int(probs.argmax())
        effect = [float(probs[pred] - torch.softmax(_logits(clf, " ".join(words[:i] + words[i + 1:])), -1)[pred])
                  for i in range(len(words))]                                       # the drop when word i goes
        ex = explain(clf, text)
        true_scores = np.array([0.0, *effect, 0.0])
        true_c.append(erasure(ex, true_scores, FRACTIONS, float(probs[pred]))[0].mean())
        rand_c.append(erasure(ex, np.r_[0, rng.random(len(words)), 0], FRACTIONS, float(probs[pred]))[0].mean())
    assert np.mean(true_c) > np.mean(rand_c) + 0.05
    res = faithfulness(clf, texts[:12], ("occlusion", "random"))
    assert res["occlusion"]["comprehensiveness"] > res["random"]["comprehensiveness"]
    assert res["occlusion"]["sufficiency"] < res["random"]["sufficiency"]


def test_top_fraction_keeps_special_tokens_and_takes_at_least_one():
    special = np.array([1, 0, 0, 0, 1], bool)
    assert top(np.array([0, .9, .1, .5, 0]), special, 0.5).tolist() == [1, 3]
    assert top(np.array([9, .9, .1, .5, 9]), special, 0.01).tolist() == [1]


def test_no_state_is_left_on_the_model(bert):
    before = {n: p.clone() for n, p in bert.model.named_parameters()}
    hooks = lambda: [(len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks))  # noqa: E731
                     for m in bert.model.modules()]
    bert.attend("warm up")  # transformers installs its output-recording hooks once, on the first attention call
    hooks_before = hooks()
    for m in ("grad_x_input", "integrated_gradients", "best_head"):
        attribute(bert, "Cats chase mice", m, text_b="Dogs chase cats", steps=8)
    assert not bert.model.training
    assert all(p.grad is None for p in bert.model.parameters())
    assert hooks() == hooks_before
    assert all(torch.equal(p, before[n]) for n, p in bert.model.named_parameters())


def test_bad_input_gets_one_sentence(bert, clf):
    from models import load

    with pytest.raises(ValueError, match="at least two tokens") as err:
        attribute(clf, "good", "occlusion")
    assert str(err.value) == TOO_SHORT
    with pytest.raises(ValueError) as err:
        attribute(load("toy"), "the cat sat", "attention")
    assert str(err.value) == NO_PREDICTION
    with pytest.raises(ValueError, match="4 to 512 steps"):
        attribute(bert, "Cats chase mice", "integrated_gradients", steps=2)
    with pytest.raises(ValueError, match="None of these rows"):
        faithfulness(clf, ["good", "bad"], ("random",))


def test_decoder_explains_its_greedy_next_token():
    from models import available, load

    assert "gpt" in available()
    gpt = load("gpt")
    a = attribute(gpt, "The cat sat on the", "integrated_gradients", steps=32)
    with torch.no_grad():
        logits = gpt.model(**gpt.tokenizer("The cat sat on the", return_tensors="pt")).logits[0, -1]
    assert a.output == pytest.approx(float(logits.max()), abs=1e-4)
    assert abs(a.scores.sum() - (a.output - a.baseline_output)) <= 0.01 * abs(a.output - a.baseline_output)


def test_scoring_attributions_already_made_equals_measuring_the_row(clf):
    # the page scores the attributions it has just drawn (score_row) instead of making them again (measure)
    from experiments.attribution_methods import attribute_all
    from experiments.faithfulness import Faithfulness, measure, score_row

    text, methods = reviews.rows(1, seed=4)[0]["text"], ("attention", "grad_x_input", "occlusion", "random")
    again = measure(clf, [text], methods, FRACTIONS, heads=False)
    ex = explain(clf, text)
    once = Faithfulness(methods, FRACTIONS)
    score_row(once, ex, attribute_all(ex, methods))
    assert once.rows == again.rows == 1
    for m in methods:
        np.testing.assert_allclose(once.comp[m], again.comp[m], atol=1e-6)
        np.testing.assert_allclose(once.suff[m], again.suff[m], atol=1e-6)
    assert once.tau.keys() == again.tau.keys()
    for m in methods:
        assert once.summary[m] == pytest.approx(again.summary[m])
