"""Token scores of one prediction by each method: attention, rollout, flow, gradients, occlusion, random.

    res = attribute_all(explain(model, text), ("attention", "integrated_gradients"), steps=64)
    res["integrated_gradients"].scores -> [T] float, one per token; .delta: IG's completeness error

- attention: the last layer's attention from the explained position ([CLS], or the predicting position of a
  decoder), mean of heads. best_head: the one head (any layer) whose row ranks tokens most like integrated
  gradients on this text (Kendall tau): chosen by looking at the gradients, so an upper bound for one head.
- rollout, flow: analysis.rollout / analysis.flow (residual 0.5, heads mean-fused), the explained position's row.
- grad_x_input: Captum's InputXGradient at the word embeddings, summed over the hidden dimension.
- integrated_gradients: Captum's IntegratedGradients (Gauss-Legendre, `steps` points) from a baseline where each
  ordinary token's embedding is the pad token's ("pad") or zeros ("zero"), special tokens kept; completeness: the
  scores sum to output - baseline output, `delta` is the difference.
- occlusion: output minus the output with that one token deleted (not replaced).
- random: uniform scores from a generator seeded by the text (the baseline every method must beat).
Special tokens get score 0 in the gradient, occlusion and random methods (never removed, never ranked).
Does not: put state on the model: gradients are taken with torch.autograd.grad (through Captum) with respect to
the embeddings only; no hooks, no train mode.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from analysis.flow import attention_flow
from analysis.rollout import rollout
from experiments.explained import Explained
from limits.errors import UserError

METHODS = ("attention", "rollout", "flow", "grad_x_input", "integrated_gradients", "occlusion", "random")
ALL_METHODS = ("attention", "best_head", "rollout", "flow", "grad_x_input", "integrated_gradients", "occlusion",
               "random")
LABELS = {"attention": "attention (last layer, mean of heads)", "best_head": "best single head",
          "rollout": "attention rollout", "flow": "attention flow", "grad_x_input": "gradient × input",
          "integrated_gradients": "integrated gradients", "occlusion": "occlusion (leave one out)",
          "random": "random"}
BASELINES = ("pad", "zero")
STEPS = (4, 512)  # the integrated-gradients steps allowed


@dataclass(frozen=True)
class Attribution:
    tokens: list[str]
    scores: np.ndarray           # [T] float64, one per token
    target: str                  # what was explained: a class name, a next token, "cosine to text 2"
    output: float                # the explained number at the input
    baseline_output: float       # ... at the integrated-gradients baseline
    method: str
    special: np.ndarray          # bool [T]
    what: str                    # one sentence on what the number is
    delta: float | None = None   # integrated gradients: sum(scores) - (output - baseline_output)
    head: tuple[int, int] | None = None  # best_head: (layer, head)


def check_steps(steps: int) -> int:
    if not STEPS[0] <= int(steps) <= STEPS[1]:
        raise UserError(f"Integrated gradients takes {STEPS[0]} to {STEPS[1]} steps, not {steps}.")
    return int(steps)


def baseline_embeds(ex: Explained, baseline: str = "pad") -> torch.Tensor:
    """The IG baseline (1, T, D): ordinary tokens as the pad token ("pad") or zeros ("zero"), special tokens kept."""
    if baseline not in BASELINES:
        raise UserError(f"The baseline is one of {', '.join(BASELINES)}, not '{baseline}'.")
    x = ex.embeds()                                                              # (1, T, D)
    keep = torch.as_tensor(ex.special, device=x.device)[None, :, None]           # (1, T, 1)
    other = torch.zeros_like(x) if baseline == "zero" else ex.embeds(torch.full_like(ex.ids, ex.pad_id))
    return torch.where(keep, x, other)


def kendall(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b of two score vectors (0 when one is constant)."""
    from scipy.stats import kendalltau

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(kendalltau(a, b).statistic)


def _grad_x_input(ex: Explained) -> np.ndarray:
    from captum.attr import InputXGradient

    x = ex.embeds().requires_grad_()                                             # (1, T, D), a leaf of ours
    with torch.enable_grad():
        attr = InputXGradient(lambda e: ex.score(e)).attribute(x)               # (1, T, D)
    return attr[0].sum(-1).detach().double().cpu().numpy()


def integrated_gradients(ex: Explained, steps: int = 64, baseline: str = "pad") -> tuple[np.ndarray, float]:
    """(scores [T], completeness delta) of Captum's integrated gradients."""
    from captum.attr import IntegratedGradients

    x, base = ex.embeds(), baseline_embeds(ex, baseline)                         # (1, T, D) each
    with torch.enable_grad():
        attr, delta = IntegratedGradients(lambda e: ex.score(e)).attribute(
            x, baselines=base, n_steps=check_steps(steps), method="gausslegendre", internal_batch_size=min(steps, 32),
            return_convergence_delta=True)                                       # (1, T, D), (1,)
    return attr[0].sum(-1).detach().double().cpu().numpy(), float(delta[0])


def occlusion(ex: Explained, output: float) -> np.ndarray:
    """output - the output with token i deleted, for each ordinary token i (0 for special tokens)."""
    n = len(ex.tokens)
    places = np.flatnonzero(~ex.special)
    dropped = ex.values([np.delete(np.arange(n), i) for i in places])            # (N,)
    scores = np.zeros(n)
    scores[places] = output - dropped
    return scores


def _seeded(ex: Explained) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(" ".join(ex.tokens).encode()).digest()[:8], "little"))


def attribute_all(ex: Explained, methods=ALL_METHODS, steps: int = 64, baseline: str = "pad",
                  progress: Callable[[float, str], None] | None = None) -> dict[str, Attribution]:
    """Every asked method's Attribution on one explained prediction (IG is computed once, for best_head too)."""
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise UserError(f"Unknown method '{unknown[0]}': choose from {', '.join(ALL_METHODS)}.")
    check_steps(steps)
    with torch.no_grad():
        output = float(ex.score(ex.embeds())[0])
        base_out = float(ex.score(baseline_embeds(ex, baseline))[0])
    weights = ex.attention() if {"attention", "best_head", "rollout", "flow"} & set(methods) else None  # (L, H, T, T)
    ig = integrated_gradients(ex, steps, baseline) if {"integrated_gradients", "best_head"} & set(methods) else None
    ordinary = ~ex.special
    out = {}
    for done, m in enumerate(methods):
        if progress is not None:
            progress(done / len(methods), LABELS[m])
        delta = head = None
        if m == "attention":
            s = weights[-1].mean(0)[ex.source]                                   # (T,)
        elif m == "best_head":
            rows = weights[:, :, ex.source]                                      # (L, H, T)
            taus = np.array([[kendall(r[ordinary], ig[0][ordinary]) for r in layer] for layer in rows])  # (L, H)
            head = tuple(int(i) for i in np.unravel_index(np.nanargmax(taus), taus.shape))
            s = rows[head]
        elif m == "rollout":
            s = rollout(weights)[ex.source]
        elif m == "flow":
            s = attention_flow(weights)[ex.source]
        elif m == "grad_x_input":
            s = _grad_x_input(ex)
        elif m == "integrated_gradients":
            s, delta = ig
        elif m == "occlusion":
            s = occlusion(ex, output)
        else:
            s = np.where(ordinary, _seeded(ex).random(len(ex.tokens)), 0.0)
        out[m] = Attribution(list(ex.tokens), np.asarray(s, np.float64), ex.target, output, base_out, m,
                             ex.special, ex.what, delta, head)
    return out
