"""A sparse pattern laid on a real model's attention scores, for one call, against the same model dense.

    mask = sparsity.sliding_window(len(tokens), 2)
    eff = encoder_effect(load("bert"), "The cat sat on the mat.", None, mask)
    eff.output_cosine, eff.dropped_mass, eff.argmax_agree

Encoders (MiniLM and other transformers BERT-style models loaded with eager attention) take the
pattern as a 4-D additive attention mask of this call: 0 where a pair is kept, the dtype's most
negative number where not, so their softmax gives dropped pairs exactly 0. The tiny decoder takes
it as its forward's `mask` argument, on top of its causal mask. Nothing is put on the shared model:
no hooks, no flags, no state; with an all-True mask both paths give the dense numbers exactly.

Measures: per layer, the attention weight the dense model put on the pairs the pattern drops and
the share of (head, query) rows whose most-attended key is unchanged; per layer (encoders) the
cosine of the hidden states; the cosine of the final hidden states (encoders; also of their mean
over tokens, the sentence embedding MiniLM is made for) or of the answer positions' logits
(decoder); top-1 agreement of the masked-LM head where the model has one, and of the decoder's
next-token predictions; the decoder's greedy answer written under the pattern.
Does not train, prune or time anything.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from analysis import masks
from limits.errors import UserError


@dataclass(frozen=True)
class Effect:
    tokens: list[str]
    mask: np.ndarray                  # [T, T] bool, the pattern as the model applied it (decoder: & causal)
    dense: np.ndarray                 # [L, H, T, T] attention without the pattern
    sparse: np.ndarray                # [L, H, T, T] attention with it
    dropped_mass: np.ndarray          # [L] mean over heads and queries of dense weight on dropped pairs
    argmax_agree: np.ndarray          # [L] share of (head, query) whose most-attended key is the same
    layer_cosine: np.ndarray | None   # [L] mean cosine over tokens of the hidden states after each layer
    output_cosine: float              # final hidden states (encoder) or answer logits (decoder), mean cosine
    top1: float | None                # share of predictions unchanged (masked-LM head or next token), else None
    what: str                         # what output_cosine and top1 compare, in words
    sentence_cosine: float | None = None  # encoder: cosine of the mean-pooled final hidden states (MiniLM's output)
    answer: tuple[str, str] | None = None  # decoder: (dense answer, answer under the pattern)


def additive_mask(mask: torch.Tensor, dtype: torch.dtype, device) -> torch.Tensor:
    """bool [T, T] -> (1, 1, T, T) float: 0 where kept, torch.finfo(dtype).min where not (as transformers does)."""
    out = torch.zeros(1, 1, *mask.shape, dtype=dtype, device=device)
    return out.masked_fill(~mask.to(device), torch.finfo(dtype).min)


def _attention_stats(dense: torch.Tensor, sparse: torch.Tensor, mask: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """dense, sparse (L, H, T, T), mask (T, T) -> dropped mass [L], argmax agreement [L]."""
    dropped = (dense * (~mask).to(dense.dtype)).sum(-1).mean(dim=(1, 2))  # (L,)
    agree = (dense.argmax(-1) == sparse.argmax(-1)).float().mean(dim=(1, 2))  # (L,)
    return dropped.double().cpu().numpy(), agree.double().cpu().numpy()


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine along the last axis, in float64 so 1.0 means equal to rounding."""
    return F.cosine_similarity(a.double(), b.double(), dim=-1)


def _check_mask(mask: torch.Tensor, T: int) -> torch.Tensor:
    if mask.dtype != torch.bool or tuple(mask.shape) != (T, T):
        raise ValueError(f"The pattern must be a boolean [{T}, {T}] mask for these {T} tokens, "
                         f"not {mask.dtype} {tuple(mask.shape)}.")
    return mask


@torch.no_grad()
def encoder_run(encoder, enc: dict, mask: torch.Tensor | None):
    """One forward of a models.hf.Encoder (with its masked-LM head when it has one) with the pattern as a
    4-D mask for this call (None: the model's own 2-D mask) -> (attentions (L, H, T, T), hidden states
    tuple, logits or None)."""
    net = encoder.mlm if encoder.mlm is not None else encoder.model
    inputs = dict(enc)
    if mask is not None:
        inputs["attention_mask"] = additive_mask(mask, next(net.parameters()).dtype, enc["input_ids"].device)
    out = net(**inputs, output_attentions=True, output_hidden_states=True)
    if out.attentions is None or out.attentions[0] is None:
        raise UserError("This model returned no attention weights; load it with attn_implementation='eager'.")
    att = torch.stack(out.attentions, dim=1)[0]  # (L, H, T, T)
    return att, out.hidden_states, getattr(out, "logits", None)


@torch.no_grad()
def encoder_effect(encoder, text: str, text_b: str | None, mask: torch.Tensor, dense: tuple | None = None) -> Effect:
    """The encoder on `text` dense and with `mask` ([T, T] bool over its tokens), compared.

    dense: encoder_run(encoder, enc, None) for this text when already at hand (a page keeps it while only the
    pattern changes); run here otherwise.
    """
    enc, _ = encoder.encode(text, text_b)
    T = enc["input_ids"].shape[1]
    mask = _check_mask(mask, T)
    try:
        d_att, d_hid, d_log = dense if dense is not None else encoder_run(encoder, enc, None)
        s_att, s_hid, s_log = encoder_run(encoder, enc, mask)
    except (TypeError, RuntimeError) as err:
        raise UserError(f"This model does not take a per-call attention mask ({type(err).__name__}); "
                        "use 'bert' or another BERT-style encoder.") from err
    dropped, agree = _attention_stats(d_att, s_att, mask.to(d_att.device))
    layer_cos = np.array([float(_cos(a[0], b[0]).mean()) for a, b in zip(d_hid[1:], s_hid[1:])])
    top1 = None if d_log is None else float((d_log.argmax(-1) == s_log.argmax(-1)).float().mean())
    what = ("final hidden states, and the masked-LM head's top prediction per token" if d_log is not None else
            "final hidden states (this model has no masked-LM head, so no prediction to compare)")
    return Effect(
        tokens=encoder.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist()),
        mask=mask.cpu().numpy(), dense=d_att.float().cpu().numpy(), sparse=s_att.float().cpu().numpy(),
        dropped_mass=dropped, argmax_agree=agree, layer_cosine=layer_cos,
        output_cosine=float(_cos(d_hid[-1][0], s_hid[-1][0]).mean()), top1=top1, what=what,
        sentence_cosine=float(_cos(d_hid[-1][0].mean(0), s_hid[-1][0].mean(0))))


def decoder_length(tiny, text: str) -> int:
    """The longest sequence the tiny decoder can feed for this prompt: a pattern is built for it once."""
    from models.tiny import MAX_DIGITS, encode

    return len(encode(text)) + MAX_DIGITS + 1


@torch.no_grad()
def greedy(net, prompt: list[int], mask: torch.Tensor | None, max_new: int, end: int) -> list[int]:
    """Greedy decoding without a cache, each step a full forward with mask[:T, :T] (None: dense)."""
    ids = list(prompt)
    device = next(net.parameters()).device
    for _ in range(max_new):
        T = len(ids)
        logits, _ = net(torch.tensor([ids], device=device), mask=None if mask is None else mask[:T, :T])
        ids.append(int(logits[0, -1].argmax()))
        if ids[-1] == end:
            break
    return ids[len(prompt):]


@torch.no_grad()
def decoder_effect(tiny, text: str, pattern: Callable[[int], torch.Tensor]) -> Effect:
    """The tiny decoder sorting `text`, dense and with pattern(n) (n = decoder_length) on top of its causal mask.

    Teacher-forced over the dense prompt + answer: attention, the logits at the answer positions (cosine)
    and their top-1; then the answer each writes greedily.
    """
    from models.tiny import END, MAX_DIGITS, VOCAB, encode

    prompt = encode(text)
    full = pattern(decoder_length(tiny, text))  # (n, n): built once, sliced for every length
    dense_new = greedy(tiny.net, prompt, None, MAX_DIGITS + 1, END)
    ids = prompt + [t for t in dense_new if t != END]
    T = len(ids)
    mask = _check_mask(full[:T, :T], T)
    idx = torch.tensor([ids], device=tiny.device)  # (1, T)
    d_log, d_att = tiny.net(idx)
    s_log, s_att = tiny.net(idx, mask=mask)
    d_att, s_att = torch.stack([a[0] for a in d_att]), torch.stack([a[0] for a in s_att])  # (L, nh, T, T)
    applied = mask & masks.causal(T)
    dropped, agree = _attention_stats(d_att, s_att, applied.to(d_att.device))
    ans = slice(len(prompt) - 1, T)  # positions whose prediction writes the answer (and its '.')
    sparse_new = greedy(tiny.net, prompt, full, MAX_DIGITS + 1, END)

    def text_of(ids: list[int]) -> str:
        return "".join(VOCAB[i] for i in ids if i != END)

    return Effect(
        tokens=[VOCAB[i] for i in ids], mask=applied.numpy(), dense=d_att.float().cpu().numpy(),
        sparse=s_att.float().cpu().numpy(), dropped_mass=dropped, argmax_agree=agree, layer_cosine=None,
        output_cosine=float(_cos(d_log[0, ans], s_log[0, ans]).mean()),
        top1=float((d_log[0, ans].argmax(-1) == s_log[0, ans].argmax(-1)).float().mean()),
        what="logits at the answer positions, and the next token each predicts there",
        answer=(text_of(dense_new), text_of(sparse_new)))
