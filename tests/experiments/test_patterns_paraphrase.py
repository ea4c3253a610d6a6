"""Clark-style pattern labels on hand-made attention, and the paraphrase task's pieces."""
import numpy as np
import torch

from analysis.patterns import head_stats, labels
from data import paraphrases
from experiments import paraphrase


def test_labels_from_synthetic_heads():
    tokens = ["[CLS]", "the", "cat", ",", "sat", ".", "[SEP]"]
    n = len(tokens)
    w = np.zeros((1, 6, n, n))
    w[0, 0, np.arange(n), np.maximum(np.arange(n) - 1, 0)] = 1     # previous token
    w[0, 1, np.arange(n), np.minimum(np.arange(n) + 1, n - 1)] = 1  # next token
    w[0, 2, :, 0] = 1                                              # [CLS]
    w[0, 3, :, 6] = 1                                              # [SEP]
    w[0, 4, :, [3, 5]] = 0.5                                       # punctuation
    w[0, 5] = 1 / n                                                # broad
    assert labels(head_stats([w], [tokens])) == [
        ["previous token", "next token", "[CLS]", "[SEP]", "punctuation", "broad"]]


def test_pairs_and_scramble():
    pairs = paraphrases.load_pairs()
    assert len(pairs) >= 100 and len(set(pairs)) == len(pairs)
    score, held = paraphrases.split(pairs, 40, 80)
    assert not set(score) & set(held) and len(score) == 40 and len(held) == 80
    s = paraphrases.scramble("The cat sat on the mat.")
    assert s != "The cat sat on the mat." and sorted(s.rstrip(".").split()) == sorted("The cat sat on the mat".split())


def test_loss_and_accuracy_against_the_formula():
    e = torch.nn.functional.normalize(torch.randn(9, 5, generator=torch.Generator().manual_seed(0)), dim=-1)

    class Fixed:  # a "model" whose mean-pooled output is e
        def __call__(self, input_ids, attention_mask):
            return type("Out", (), {"last_hidden_state": e[:, None, :].expand(-1, 2, -1)})

    x = {"input_ids": torch.zeros(9, 2, dtype=torch.long), "attention_mask": torch.ones(9, 2)}
    sim = e[:3] @ e[3:].T                                             # (3, 6)
    want = -torch.log_softmax(20 * sim, dim=1).diagonal().mean()
    torch.testing.assert_close(paraphrase.loss(Fixed(), x), want)
    assert paraphrase.accuracy(Fixed(), x) == float((sim.argmax(1) == torch.arange(3)).float().mean())
