"""Token scores of one prediction by each method: attention, rollout, flow, gradients, occlusion, random.

    res = attribute_all(explain(model, text), ("attention", "integrated_gradients"), steps=64)
    res["integrated_gradients"].scores -> [T] float, one per token; .delta: IG's completeness error

- attention: the last layer's attention from the explained position ([CLS], or the predicting position of a
  decoder), mean of heads. best_head: the one head (any layer) whose row ranks tokens most like integrated
  gradients on this text (Kendall tau): chosen by looking at the gradients, so an upper bound for one head.
- rollout, flow: analysis.rollout / analysis.flow (residual 0.5, heads mean-fused), the explained position's row.
- grad_x_input: the embeddings times the gradient at them (Captum's InputXGradient), summed over the hidden dimension.
- integrated_gradients: Captum's IntegratedGradients (Gauss-Legendre, `steps` points), written out here with the
  same operations (Captum imports matplotlib: +34 MB for two short functions), from a baseline where each
  ordinary token's embedding is the pad token's ("pad") or zeros ("zero"), special tokens kept; completeness: the
  scores sum to output - baseline output, `delta` is the difference.
- occlusion: output minus the output with that one token deleted (not replaced).
- random: uniform scores from a generator seeded by the text (the baseline every method must beat).
Special tokens get score 0 in the gradient, occlusion and random methods (never removed, never ranked).
Does not: put state on the model: gradients are taken with torch.autograd.grad with respect to
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
    """Kendall's tau-b of two score vectors (0 when one is constant, NaN when either holds one), the statistic of
    scipy.stats.kendalltau by its own formula on exact pair counts, without importing scipy.stats (+21 MB).
    kendall([1, 2, 3], [1, 3, 2]) -> 0.333..."""
    a, b = np.asarray(a), np.asarray(b)
    if np.isnan(a).any() or np.isnan(b).any():
        return float("nan")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    i, j = np.triu_indices(len(a), 1)                                            # every pair once, (P,) each
    sa, sb = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])                          # (P,) in {-1, 0, 1}
    tot, xtie, ytie = len(i), int((sa == 0).sum()), int((sb == 0).sum())
    con_minus_dis = int(np.count_nonzero(sa * sb > 0)) - int(np.count_nonzero(sa * sb < 0))
    tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    return float(min(1.0, max(-1.0, tau)))


def _grad_x_input(ex: Explained) -> np.ndarray:
    """The embeddings times the explained number's gradient at them, summed over the hidden dimension: Captum's
    InputXGradient step for step (the same numbers), without importing Captum (+34 MB with matplotlib)."""
    x = ex.embeds().requires_grad_()                                             # (1, T, D), a leaf of ours
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(torch.unbind(ex.score(x)), x)              # (1, T, D)
    return (x * grad)[0].sum(-1).detach().double().cpu().numpy()


def _gauss_legendre(n: int) -> tuple[list[float], list[float]]:
    """(step sizes, alphas) of n-point Gauss-Legendre on [0, 1], as Captum makes them. _gauss_legendre(1) ->
    ([1.0], [0.5])"""
    x, w = np.polynomial.legendre.leggauss(n)
    return (0.5 * w).tolist(), (0.5 * (1 + x)).tolist()


def integrated_gradients(ex: Explained, steps: int = 64, baseline: str = "pad") -> tuple[np.ndarray, float]:
    """(scores [T], completeness delta) of integrated gradients (Gauss-Legendre, `steps` points, 32 at a time):
    Captum's IntegratedGradients with internal_batch_size=min(steps, 32), operation for operation, so the same
    numbers, without importing Captum and the matplotlib it imports."""
    n = check_steps(steps)
    x, base = ex.embeds(), baseline_embeds(ex, baseline)                         # (1, T, D) each
    sizes, alphas = _gauss_legendre(n)
    per, total = min(n, 32), None
    with torch.enable_grad():
        for start in range(0, n, per):
            a, w = alphas[start:start + per], sizes[start:start + per]
            path = torch.cat([base + alpha * (x - base) for alpha in a], dim=0).requires_grad_()  # (S, T, D)
            (grad,) = torch.autograd.grad(torch.unbind(ex.score(path)), path)   # (S, T, D)
            scaled = grad.contiguous().view(len(a), -1) * torch.tensor(w).float().view(len(a), 1).to(grad.device)
            part = scaled.reshape((len(a), 1) + grad.shape[1:]).sum(0) * (x - base)  # (1, T, D)
            total = part if total is None else part.detach() + total
    with torch.no_grad():
        gap = ex.score(x).reshape(1, -1).sum(1) - ex.score(base).reshape(1, -1).sum(1)  # (1,)
        delta = total.reshape(1, -1).sum(1) - gap                                # (1,)
    return total[0].sum(-1).detach().double().cpu().numpy(), float(delta[0])


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
