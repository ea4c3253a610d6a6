"""A decoder's final norm read as (γ, β, ε, centres): the one reading the direct logit split uses (`params`), an RMS
norm's factor with its scale frozen (`rms_factor`: the split's and circuits' sandwich norms), and the plain torch
LayerNorm or RMSNorm a norm is rebuilt as where its own module does not say what it computes (`plain`).

`params` reads a norm that says what it computes: β what it makes of zeros, whether it centres (a constant vector
comes out as β), ε its `eps` (or `variance_epsilon`), γ a LayerNorm's `weight` (ones where it has none) or what an RMS
norm makes of ones (rms 1), so a family that scales by (1 + weight), as Gemma does, gets its own γ. Some families'
norms do not say: Nemotron's LayerNorm1P multiplies by weight + 1, OLMo's LayerNorm has no parameters and a fixed ε
it keeps nowhere, NanoChat's RMS norm has neither a weight nor a shape. `plain` gives such a norm as the torch module
it equals, its numbers read off its outputs: β what it makes of zeros, whether it centres (a constant vector comes out
as β), γ from a probe whose normalised value is known, ε from two probes of different size (the ratio of their
outputs is s · √(v + ε) / √(s² v + ε)), rounded to two digits. It refuses (UserError) a norm the rebuilt one does not
reproduce on the residual it will read, up to the rounding of the norm's output (its dtype, not its parameters': OLMo's
norm has none and returns bfloat16 in a bfloat16 model; γ read off a half-precision output is rounded as that output
is). It does not change a norm that already says what it computes (torch's own,
a Llama-like RMS norm with a weight and an ε), and does not follow a norm with more than a scale and a shift.

    plain(NanoChatRMSNorm(eps=1e-6), last)     # torch.nn.RMSNorm((C,), eps=1e-06), γ ones
    gamma, beta, eps, centres = params(plain(norm, last))   # (C,), (C,) or None, float, bool
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from limits.errors import UserError


def says(norm: torch.nn.Module) -> bool:
    """Whether a norm's module says what it computes: an ε, and a weight (for a LayerNorm kind, used as it is)."""
    if type(norm) in (torch.nn.LayerNorm, torch.nn.RMSNorm):
        return True
    eps = any(isinstance(getattr(norm, a, None), float) for a in ("eps", "variance_epsilon"))
    weight = isinstance(getattr(norm, "weight", None), torch.Tensor)
    if isinstance(norm, torch.nn.LayerNorm):  # a subclass may use its weight otherwise (Nemotron's weight + 1)
        return type(norm).forward is torch.nn.LayerNorm.forward
    return eps and weight


def eps_of(norm: torch.nn.Module) -> float | None:
    """The ε a norm's module keeps, whatever the family calls it (`eps`, `variance_epsilon`), or None."""
    return getattr(norm, "eps", None) or getattr(norm, "variance_epsilon", None)


def _shift(norm: torch.nn.Module, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """β (C,), what the norm makes of zeros shaped as `like` (C,), what it makes of ones (C,), and whether it centres
    (ones, a constant vector, come out as β)."""
    beta, at_ones = norm(torch.zeros_like(like)).detach(), norm(torch.ones_like(like)).detach()   # (C,) each
    return beta, at_ones, bool(torch.allclose(at_ones, beta))


def params(norm: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None, float, bool]:
    """(γ (C,), β (C,) or None where it is zero, ε, centres) of a norm that says what it computes (says(), or the
    module plain() made), read as the module docstring says. Not for a norm that does not say: rebuild it with plain()
    first (OLMo's ε, kept nowhere, would be read as 1e-6; Nemotron's γ as its weight, not weight + 1)."""
    eps = float(eps_of(norm) or 1e-6)
    weight = getattr(norm, "weight", None)
    param = next(norm.parameters(), None)
    like = torch.ones(norm.normalized_shape if weight is None else weight.shape,
                      dtype=torch.float32 if param is None else param.dtype,
                      device=None if param is None else param.device)                          # (C,)
    beta, at_ones, centre = _shift(norm, like)
    if centre:
        gamma = torch.ones_like(like) if weight is None else weight.detach()
    else:
        gamma = (at_ones - beta) * (1.0 + eps) ** 0.5
    return gamma, (beta if beta.abs().max() > 0 else None), eps, centre


def rms_factor(norm: torch.nn.Module, a: torch.Tensor) -> torch.Tensor:
    """The factor γ / rms(a) an RMS norm (one that says what it computes: params) applies to a (..., C) along its last
    axis, in a's dtype, the rms taken in float64: (..., C). With the scale frozen at a sum, each of its pieces times
    this factor is normed as the sum is (a sandwich norm's, a norm of the heads' outputs)."""
    gamma, _, eps, _ = params(norm)                                             # (C,), ε
    return gamma.to(a) / (a.double().pow(2).mean(-1, keepdim=True) + eps).sqrt().to(a.dtype)  # (..., C)


def plain(norm: torch.nn.Module, residual: torch.Tensor) -> torch.nn.Module:
    """The norm itself where it says what it computes, else the torch LayerNorm or RMSNorm it equals on residual (C,);
    UserError where no such module reproduces it."""
    if says(norm):
        return norm
    C = residual.shape[-1]
    param = next(norm.parameters(), None)
    dtype = torch.float32 if param is None else param.dtype  # a norm without parameters computes in float32
    sign = torch.ones(C, dtype=dtype, device=residual.device)
    sign[1::2] = -1                                                              # (C,) ±1, mean ~0, rms 1
    beta, _, centre = _shift(norm, sign)                                         # (C,), (C,), bool
    x = sign.double() - (sign.double().mean() if centre else 0.0)
    v = float(x.pow(2).mean())                                                   # what the norm divides by, less ε
    s = 0.01
    y1, y2 = (norm(sign * k).detach().double() - beta.double() for k in (1.0, s))  # (C,) each
    r2 = float((y2 / y1).mean()) ** 2
    eps = float(eps_of(norm) or float(f"{max(0.0, s * s * v * (1 - r2) / (r2 - s * s)):.1e}"))
    made = (torch.nn.LayerNorm(C, eps=eps, bias=True) if centre else torch.nn.RMSNorm(C, eps=eps)).to(
        device=residual.device, dtype=dtype)
    normed = (F.layer_norm(sign.double(), (C,), eps=eps) if centre else sign.double() / (v + eps) ** 0.5)  # (C,)
    with torch.no_grad():
        made.weight.copy_(y1 / normed)                                           # (C,) γ
        if centre:
            made.bias.copy_(beta)
    own = norm(residual).detach()                                                # (C,) in the norm's output dtype
    gap = float((made(residual.to(dtype)).double() - own.double()).norm())
    # as residual._close: the rounding of the norm's output, whose dtype may not be its parameters' (OLMo's norm has
    # none, so computes in float32, and returns the residual's bfloat16)
    tol = max(1e-4, 2 * torch.finfo(own.dtype).eps)
    if (beta.abs().max() > 0 and not centre) or not gap <= tol * (float(own.double().norm()) + 1e-6):
        raise UserError(f"The final norm of this model ({type(norm).__name__}) is not a LayerNorm or RMS norm the "
                        "split can rebuild, so its logits cannot be split into the residual's pieces.")
    return made
