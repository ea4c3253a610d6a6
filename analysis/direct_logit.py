"""Direct logit attribution: one token's logit split exactly into the residual stream's pieces.

The logit of token t is u_t · norm(r) + b_t, where r = Σ pieces is the residual stream at the last position.
Freeze the norm's scale s at its value on this r, and the norm becomes linear in r:

    LayerNorm   norm(r) = γ ⊙ (r − mean(r)) / s + β,   s = √(var(r) + ε)
    RMSNorm     norm(r) = γ ⊙ r / s,                   s = √(mean(r²) + ε)

so piece c contributes u_t · (γ ⊙ (c − mean(c)) / s) (no centring for RMSNorm), the constants (β, b_t and every
bias in `constant`) go to "bias", and the contributions sum to the logit up to rounding. "Direct" means only the
piece's own path to the logit: what a head changes in later layers' inputs is not counted here (patching is).
Pure tensor arithmetic: it runs no model and does not find the pieces (models.residual does).

    split(pieces={"embed": e, "L0H0": h}, constant=b, gamma=g, beta=None, eps=1e-6, centre=False, u=u_t)
    # -> {"embed": 0.41, "L0H0": -1.3, "bias": 0.0}
"""
from __future__ import annotations

import torch


def norm_scale(r: torch.Tensor, eps: float, centre: bool) -> torch.Tensor:
    """The norm's divisor s for residual r (C,): √(var + ε) for LayerNorm (centre), √(mean(r²) + ε) for RMSNorm."""
    r = r.double()
    centred = r - r.mean() if centre else r
    return torch.sqrt((centred ** 2).mean() + eps)


def split(pieces: dict[str, torch.Tensor], constant: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor | None,
          eps: float, centre: bool, u: torch.Tensor, b: float = 0.0) -> dict[str, float]:
    """Each piece's share of the logit u · norm(Σ pieces + constant) + b (pieces and constant (C,), u (C,)),
    with "bias" holding the constant's share, the norm's β and b; float64 throughout."""
    r = sum(pieces.values()) + constant                         # (C,)
    s = norm_scale(r, eps, centre)
    read = u.double() * gamma.double() / s                       # (C,) what one unit along each axis adds

    def share(c: torch.Tensor) -> float:
        c = c.double()
        return float(read @ (c - c.mean() if centre else c))

    out = {name: share(c) for name, c in pieces.items()}
    out["bias"] = share(constant) + (0.0 if beta is None else float(u.double() @ beta.double())) + float(b)
    return out
