"""The tiny decoder's sorting task: exact match equals greedy generation under gates; gradient
importance through the gates equals finite differences."""
import numpy as np
import torch

from experiments import sorting
from experiments.importance import gradient_importance
from models.gates import gated, head_counts, mask
from models.tiny import END, VOCAB, encode, read_weights


def greedy_exact(net, texts: list[str]) -> float:
    """Independent path: real greedy generation with the KV cache, strings of one length batched together."""
    right = 0
    for n in {len(t) for t in texts}:
        group = [t for t in texts if len(t) == n]
        new, _, _ = net.generate(torch.tensor([encode(t) for t in group]), max_new=11)
        for t, row in zip(group, new.tolist()):
            right += row[:n + 1] == [VOCAB.index(c) for c in sorted(t)] + [END]
    return right / len(texts)


def test_held_out_strings_are_fixed_and_disjoint_from_scoring():
    assert sorting.held_out(5) == sorting.held_out(5) and all(1 <= len(s) <= 10 for s in sorting.held_out(50))
    assert not set(sorting.held_out(40)) & {s for s in sorting.strings(40, sorting.SCORE_SEED) if len(s) >= 5}


def test_exact_match_equals_greedy_generation_under_gates():
    net, _ = read_weights()
    texts = sorting.held_out(40)
    metric = sorting.held_out_metric(net, 40)
    for plan in ({}, {0: [1]}, {0: [2]}, {1: [0, 1]}):
        with gated(net, mask(head_counts(net), plan)):
            assert abs(metric(plan) - greedy_exact(net, texts)) < 1e-6, plan
    assert metric({}) == 1.0 and metric({0: [2]}) < 0.5


def test_tiny_gradient_importance_equals_finite_differences(finite_differences):
    net, _ = read_weights()
    net = net.double()
    batches, eps = sorting.task(12, 0, size=6)[0], 1e-4
    got = gradient_importance(net, sorting.loss, batches, normalise=False)
    fd = finite_differences(net, sorting.loss, batches, eps)
    np.testing.assert_allclose(got, fd, rtol=1e-4)
