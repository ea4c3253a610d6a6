"""A decoder's next token: its logits, the filters from logits to probabilities, and append-and-continue.

    logits = last_logits(model, ids)                                 # (V,) == model(ids).logits[0, -1]
    stages(logits, Settings(temperature=0.8, top_k=40, top_p=0.9))  # top tokens' probability after each filter
    steps = extend(model, ids, 8, Settings(seed=3))                  # 8 tokens, each a Choice, one KV cache

`extend` runs models.generate.stream, the one decode loop (the tiny decoder's KVCache, or transformers' own
DynamicCache through models.hf.writing.HFCache): the prompt is fed once, then one token per step. A sampled
token is drawn from analysis.sampling.next_token_probs with a generator seeded by (seed, position), so a step
draws the same token however the steps are split between requests. It keeps nothing between calls (the view
keeps the steps), and it does not search (no beam).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from analysis.sampling import check, next_token_probs
from experiments.logit_lens import token_names
from limits.errors import UserError
from models.contract import named

SHOWN = 15  # tokens the chart draws


@dataclass(frozen=True)
class Settings:
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    sample: bool = True      # False: greedy (argmax), whatever the filters say
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return not self.sample or self.temperature == 0


@dataclass(frozen=True)
class Choice:
    position: int                          # where the chosen token goes in the sequence
    id: int
    token: str
    prob: float                            # its probability after the filters (1 for every greedy step)
    model_prob: float                      # its probability by the model's own softmax (temperature 1, no filter)
    ms: float                              # this step's forward pass and choice


def room(model) -> int:
    """Positions the model holds: the tiny decoder's 22, a transformers decoder's context."""
    if model.family == "tiny":
        return model.net.cfg.block_size
    return model.max_tokens


@torch.no_grad()
def last_logits(model, ids: torch.Tensor) -> np.ndarray:
    """The model's own logits (V,) at the last position of ids (1, T)."""
    if model.family == "tiny":
        return model.net(ids)[0][0, -1].float().cpu().numpy()
    lm = model.next_token_model  # None: no causal-LM head (a classifier, an encoder, a ViT, a seq2seq, the toy)
    if lm is None:
        raise UserError(f"{named(model)} holds no language-model head, so it predicts no next token: pick a decoder "
                        "('gpt', 'tiny' or an hf: folder saved from a *ForCausalLM model).")
    return lm(input_ids=ids).logits[0, -1].float().cpu().numpy()


def stages(logits, s: Settings, n: int = SHOWN) -> dict[str, np.ndarray]:
    """For the n tokens with the largest logits (their ids under "ids"): the softmax of the raw logits, then the
    probabilities after temperature, after top-k and after top-p (each with the filters before it)."""
    order = np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")[:n]
    t = 0.0 if s.greedy else s.temperature
    out = {"ids": order, "softmax": next_token_probs(logits)[order],
           "temperature": next_token_probs(logits, t)[order],
           "top-k": next_token_probs(logits, t, s.top_k)[order],
           "top-p": next_token_probs(logits, t, s.top_k, s.top_p)[order]}
    return out


def _chooser(s: Settings, start: int, record: list) -> Callable[[torch.Tensor], torch.Tensor]:
    def choose(last: torch.Tensor) -> torch.Tensor:  # (1, V) -> (1, 1)
        position = start + len(record)
        logits = last[0].float().cpu().numpy()
        probs = next_token_probs(logits, 0.0 if s.greedy else s.temperature, s.top_k, s.top_p)  # (V,)
        if s.greedy:
            pick = int(np.argmax(logits))
        else:
            gen = torch.Generator().manual_seed(s.seed * 1_000_003 + position)
            pick = int(torch.multinomial(torch.from_numpy(probs), 1, generator=gen))
        record.append((position, pick, logits, probs))
        return torch.tensor([[pick]], device=last.device)
    return choose


@torch.no_grad()
def extend(model, ids: torch.Tensor, n: int, s: Settings,
           progress: Callable[[float, str], None] | None = None) -> list[Choice]:
    """n more tokens after ids (1, T), each chosen by s, with one KV cache; ValueError past the context."""
    check(s.temperature, s.top_k, s.top_p)
    T = ids.shape[1]
    if T + n > room(model):
        raise UserError(f"This model holds {room(model)} positions and the text has {T}: append at most "
                        f"{max(room(model) - T, 0)} tokens, or go back a few steps.")
    record: list = []
    choose = _chooser(s, T, record)
    if model.family == "tiny":
        from models.generate import stream

        steps = stream(model.net, ids, n, use_cache=True, choose=choose)
    else:
        steps = model.steps(ids, n, use_cache=True, choose=choose)
    out = []
    for i, step in enumerate(steps):
        position, pick, logits, probs = record[i]
        soft = next_token_probs(logits)
        out.append(Choice(position, pick, token_names(model, [pick])[0], float(probs[pick]), float(soft[pick]),
                          1000 * step.seconds))
        if progress is not None:
            progress((i + 1) / n, f"{i + 1} of {n} tokens")
    return out
