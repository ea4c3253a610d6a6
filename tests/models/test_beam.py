"""models.beam.search, the one beam search: exhaustive against brute force, width 1 against a greedy loop."""
import itertools

import numpy as np
import pytest
import torch

from models.beam import search

V, EOS = 4, 0


def table(seed: int) -> torch.Tensor:
    """log p(next | last) for a toy model whose state is its last token: (V + 1, V), row V is the start."""
    return torch.randn(V + 1, V, generator=torch.Generator().manual_seed(seed)).log_softmax(-1)


def step_of(logp: torch.Tensor):
    def step(prefixes, states):
        last = torch.tensor([p[-1] if p else V for p in prefixes])
        return logp[last], [None] * len(prefixes), None
    return step


@pytest.mark.parametrize("seed", range(5))
def test_a_wide_enough_beam_finds_the_likeliest_finished_sequence(seed):
    logp, max_len = table(seed), 4
    best = max(
        (sum(float(logp[a, b]) for a, b in zip((V, *seq[:-1]), seq)), seq)
        for n in range(1, max_len + 1) for seq in itertools.product(range(V), repeat=n)
        if seq[-1] == EOS and EOS not in seq[:-1]
    )
    hyps = search(step_of(logp), width=V ** max_len, max_len=max_len, eos=EOS)
    assert hyps[0].finished and hyps[0].ids == best[1]
    assert abs(hyps[0].score - best[0]) < 1e-5


@pytest.mark.parametrize("seed", range(5))
def test_width_one_is_the_greedy_loop(seed):
    logp, ids, score, last = table(seed), [], 0.0, V
    for _ in range(6):
        nxt = int(logp[last].argmax())
        ids.append(nxt)
        score += float(logp[last, nxt])
        last = nxt
        if nxt == EOS:
            break
    (hyp,) = search(step_of(logp), width=1, max_len=6, eos=EOS)
    assert hyp.ids == tuple(ids) and abs(hyp.score - score) < 1e-5 and hyp.finished == (ids[-1] == EOS)


def test_hypotheses_come_finished_first_each_group_by_score_and_carry_alphas():
    logp = table(7)

    def step(prefixes, states):
        logits, _, _ = step_of(logp)(prefixes, states)
        return logits, states, torch.full((len(prefixes), 3), 1 / 3)

    hyps = search(step, width=3, max_len=5, eos=EOS)
    done = [h for h in hyps if h.finished]
    assert hyps[: len(done)] == done
    for group in (done, hyps[len(done):]):
        assert [h.score for h in group] == sorted((h.score for h in group), reverse=True)
    assert all(len(h.alphas) == len(h.ids) and np.allclose(h.alphas[0].numpy(), 1 / 3) for h in hyps)
    with pytest.raises(ValueError, match="at least 1"):
        search(step, width=0, max_len=5, eos=EOS)
