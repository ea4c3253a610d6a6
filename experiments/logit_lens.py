"""The logit lens and direct logit attribution of a decoder's next token, from one forward pass.

    d = decompose(model, "The river bank was", target=None)   # the tiny decoder, 'gpt' or any hf: decoder
    d.tokens, d.target, d.logit            # the logit of the target at the last position (before a final cap)
    d.own                                  # the model's own logit (after its final cap, where it has one)
    d.parts                                # "embed", "L{l}H{h}", "L{l}.mlp", "bias" -> float; sum == d.logit
    d.lens                                 # per layer: the top 5 (token, probability) read from the residual

The residual stream's pieces come from models.residual (functional, nothing kept on the model); the split with
the final norm's scale frozen is analysis.direct_logit's. The lens reads the residual after each layer through
the model's own final norm and unembedding (nostalgebraist 2020), so its last row is the model's own output.
What it leaves out: a head's effect through later layers (what it changes in their inputs) is not in its part;
an MLP's non-linearity is not split among its neurons. It does not sample (experiments.next_token does).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from analysis import direct_logit
from analysis.tokens import WHITESPACE
from limits.errors import UserError
from models.final_norm import params
from models.residual import Components, components, why_not

TOP = 5
BEFORE = "before L0"  # the part of a hybrid's layers without attention before its first that attends


def capped(z: float, cap: float) -> float:
    """A logit through a final softcap (Gemma 2): c · tanh(z / c)."""
    return float(cap * np.tanh(z / cap))


@dataclass(frozen=True)
class Decomposition:
    tokens: list[str]
    target: str
    logit: float                               # the logit of target the parts explain (before a final cap)
    parts: dict[str, float]                    # sums to logit (up to rounding)
    lens: list[list[tuple[str, float]]]        # per layer: top TOP (token, probability)
    target_id: int = 0
    heads: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (L, H) the heads' parts
    stages: list[tuple[str, float]] = field(default_factory=list)        # (stage, ‖residual‖ after it)
    lens_target: list[float] = field(default_factory=list)              # per layer: the target's lens probability
    writes: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (L, H + 1) ‖each head's write‖, ‖MLP's‖
    notices: tuple[str, ...] = ()
    cap: float | None = None                   # the model's final softcap c (Gemma 2), or None
    hybrid: bool = False                       # some layers do not attend: each layer's row and MLP part hold them

    @property
    def own(self) -> float:
        """The model's own logit of target: `logit`, or c · tanh(logit / c) where the model caps its logits."""
        return self.logit if self.cap is None else capped(self.logit, self.cap)

    @property
    def total(self) -> float:
        """Σ parts (equals logit within float rounding)."""
        return float(sum(self.parts.values()))


def encode(model, text: str) -> tuple[torch.Tensor, tuple[str, ...]]:
    """Token ids (1, T) of the prompt and any notice (a text past the context is cut, as the model's encode says)."""
    if model.family == "tiny":
        from data.sorting import encode as digits

        return torch.tensor([digits(text)], device=model.device), ()
    if model.family == "encoder":  # a BERT-style causal LM that writes (Next token asks models.hf.Encoder.writes)
        return model.prompt(text)
    return model.encode(text)


def token_names(model, ids: list[int]) -> list[str]:
    if model.family == "tiny":
        from data.sorting import VOCAB

        return [VOCAB[i] for i in ids]
    return model.tokenizer.convert_ids_to_tokens(ids)


VISIBLE = {mark: ch for ch, mark in WHITESPACE.items()}  # '␣' -> ' ', '⏎' -> '\n': how the charts write whitespace


def token_id(model, target: str) -> int:
    """The id of one token written as the tokenizer writes it ('Ġbank'), as the charts write it ('␣bank', '⏎'), or
    as text (' bank'); ValueError if none."""
    if model.family == "tiny":
        from data.sorting import VOCAB

        if target in VOCAB:
            return VOCAB.index(target)
        raise UserError(f"The tiny decoder's tokens are {' '.join(VOCAB)}, not {target!r}.")
    tok = model.tokenizer
    found = tok.convert_tokens_to_ids(target)
    if isinstance(found, int) and tok.convert_ids_to_tokens(found) == target:
        return found
    ids = tok(target, add_special_tokens=False)["input_ids"]
    if len(ids) != 1 and any(mark in target for mark in VISIBLE):  # a chart's label: its marks back to whitespace
        ids = tok("".join(VISIBLE.get(ch, ch) for ch in target), add_special_tokens=False)["input_ids"]
    if len(ids) == 1:
        return ids[0]
    raise UserError(f"{target!r} is {len(ids)} tokens for this tokenizer, not one: pick a token from the chart.")


def _pieces(c: Components) -> tuple[dict[str, torch.Tensor], torch.Tensor, list[tuple[str, torch.Tensor]]]:
    """The named pieces, the constant (the attention output projections' biases; an MLP's bias is in its piece), and
    the residual after each stage (name, (C,))."""
    pieces, r, path = {"embed": c.embed}, c.embed.clone(), [("embed", c.embed.clone())]
    if c.before is not None:  # a hybrid's layers without attention before its first that attends (L0)
        pieces[BEFORE] = c.before
        r = r + c.before
        path.append((BEFORE, r.clone()))
    L, H, _ = c.heads.shape
    for layer in range(L):
        for h in range(H):
            pieces[f"L{layer}H{h}"] = c.heads[layer, h]
        pieces[f"L{layer}.mlp"] = c.mlp[layer]
        r = r + c.heads[layer].sum(0) + c.attn_bias[layer]
        path.append((f"L{layer} attention", r.clone()))
        r = r + c.mlp[layer]
        path.append((f"L{layer} MLP", r.clone()))
    return pieces, c.attn_bias.sum(0), path


@torch.no_grad()
def decompose_ids(model, ids: torch.Tensor, target_id: int | None = None, notices: tuple[str, ...] = ()
                  ) -> Decomposition:
    """decompose() on token ids (1, T), for a model that models.residual.why_not passes."""
    c = components(model, ids)
    target_id = int(c.logits.argmax()) if target_id is None else int(target_id)
    pieces, constant, path = _pieces(c)
    gamma, beta, eps, centre = params(c.norm)  # the final norm as the split reads it (models.final_norm)
    bias = getattr(c.unembed, "bias", None)
    parts = direct_logit.split(pieces, constant, gamma, beta, eps, centre,
                               c.unembed.weight[target_id].detach() * c.scale,
                               0.0 if bias is None else float(bias[target_id]) * c.scale)
    z, rounding = float(c.logits[target_id]), max(1e-3, 8 * torch.finfo(c.logits.dtype).eps)  # 8 ε in bfloat16
    if c.hybrid:
        notices = (*notices, "This hybrid's layers without attention have no heads: an attending layer's MLP part "
                   "(L0.mlp, …) here holds the rest of that layer and the layers without attention after it, up to the "
                   "next that attends" + (f", and “{BEFORE}” holds those before its first." if c.before is not None
                                          else "."))
    if c.cap is not None:
        notices = (*notices, f"This model caps its logits at {c.cap:g} (c · tanh(z / c)), which no sum of parts "
                   "follows: the parts explain the logit before the cap.")  # both logits: .logit and .own
    if abs(sum(parts.values()) - z) > rounding * max(1.0, abs(z)):
        raise UserError(f"The final norm of this model ({type(c.norm).__name__}) is not a LayerNorm or RMS norm "
                        "the split knows, so the parts would not add up to the logit.")
    after_layers = [r for name, r in path if name.endswith("MLP")]              # L of (C,)
    probs = torch.softmax(c.read(torch.stack(after_layers)).float(), dim=-1)  # (L, V)
    top = probs.topk(TOP, dim=-1)
    lens = [list(zip(token_names(model, i.tolist()), p.tolist())) for p, i in zip(top.values, top.indices)]
    L, H = c.heads.shape[:2]
    return Decomposition(
        tokens=c.tokens, target=token_names(model, [target_id])[0], logit=float(c.logits[target_id]),
        parts=parts, lens=lens, target_id=target_id,
        heads=np.array([[parts[f"L{layer}H{h}"] for h in range(H)] for layer in range(L)]),
        stages=[(name, float(r.double().norm())) for name, r in path],
        lens_target=probs[:, target_id].tolist(), notices=notices, cap=c.cap, hybrid=c.hybrid,
        writes=torch.cat([c.heads.norm(dim=-1), c.mlp.norm(dim=-1)[:, None]], dim=1).double().cpu().numpy())


def decompose(model, text: str, target: str | None = None) -> Decomposition:
    """The logit lens and the direct logit attribution of `target` (a token string; None: the model's top token)
    at the last position of `text`; UserError with one sentence for what cannot be shown."""
    why = why_not(model)  # the view's sentence; before encoding, as a vision model has no text to encode
    if why:
        raise UserError(why)
    ids, notices = encode(model, text)
    return decompose_ids(model, ids, None if target is None else token_id(model, target), notices)
