"""Beam search, once, for every encoder-decoder here: the GRU date models and transformers' encoder-decoders.

The model is a function `step(prefixes, states) -> (log_probs (k, V), states, alpha (k, T_in) or None)`
that scores the next token after each of the k live hypotheses (tokens written so far, without the start
token) and hands back its per-hypothesis state (a recurrent state, or None). Hypotheses are ranked by
summed log-probability, with no length normalisation; one that writes `eos` is finished, and the search
stops once `width` have finished or none is left alive. Width 1 is exactly greedy decoding.
It does not sample, batch inputs, or know about tokenizers.

    hyps = search(step, width=4, max_len=12, eos=2, state=s0)
    hyps[0].ids, hyps[0].score     # the best: finished ones first, each group by score
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from limits.errors import UserError


@dataclass(frozen=True)
class Hypothesis:
    ids: tuple[int, ...]         # tokens written, ending with eos when finished
    score: float                 # summed log-probability of those tokens
    finished: bool               # wrote eos
    alphas: tuple = ()           # per written token, the step's attention row (T_in,), when step returns one


Step = Callable[[list[tuple[int, ...]], list], tuple[torch.Tensor, list, torch.Tensor | None]]


@torch.no_grad()
def search(step: Step, width: int, max_len: int, eos: int, state=None) -> list[Hypothesis]:
    """Every hypothesis the search ended with: the finished ones, then the live ones, each sorted by score."""
    if width < 1:
        raise UserError(f"The beam width must be at least 1, not {width}.")
    live = [(0.0, (), (), state)]                                   # (score, ids, alphas, state)
    finished = []
    for _ in range(max_len):
        logp, states, alpha = step([h[1] for h in live], [h[3] for h in live])  # (k, V)
        total = torch.tensor([h[0] for h in live], device=logp.device).unsqueeze(1) + logp  # (k, V)
        top = total.flatten().topk(min(width, total.numel()))
        parents, live = live, []
        for score, flat in zip(top.values.tolist(), top.indices.tolist()):
            b, tok = divmod(flat, logp.shape[1])
            _, ids, alphas, _ = parents[b]
            hyp = (score, ids + (tok,), alphas + (() if alpha is None else (alpha[b],)), states[b])
            (finished if tok == eos else live).append(hyp)
        if len(finished) >= width or not live:
            break
    ranked = lambda hyps: sorted(hyps, key=lambda h: -h[0])  # noqa: E731
    return [Hypothesis(ids, score, done, alphas)
            for done, group in ((True, ranked(finished)), (False, ranked(live)))
            for score, ids, alphas, _ in group]
