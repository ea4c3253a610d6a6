"""Masked-LM loss and accuracy on the user's own text, for encoders loaded with their MLM head.

The text's ordinary tokens (not [CLS], [SEP], padding) are hidden behind the mask token: for a
short text (up to SHORT such tokens) each token in turn, one copy of the text per token; for a
longer one, a single copy with 15 % of them masked, chosen with a fixed seed. Loss: cross-entropy of
the original tokens at the masked places; metric: the share of them the model's top guess gets right.
Always uses the mask token (not BERT's 80/10/10 mix of mask, random and kept tokens), and scores
importance and the metric on the same text: there is no held-out set here.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from analysis import patterns
from data.paraphrases import load_pairs
from experiments.importance import confidence, gated_metric, gradient_importance
from limits.errors import UserError

SHORT, RATE, SEED = 32, 0.15, 0


def masked(tokenizer, inputs: dict) -> tuple[dict, torch.Tensor]:
    """One encoded text (1, T) -> (masked copies (N, T) as model inputs, labels (N, T): the hidden ids, else -100)."""
    ids = inputs["input_ids"][0]                                          # (T,)
    special = tokenizer.get_special_tokens_mask(ids.tolist(), already_has_special_tokens=True)
    places = torch.tensor([i for i, s in enumerate(special) if not s], dtype=torch.long)
    if not len(places):
        raise UserError("Type a few words: the masked-LM task hides words of your text and asks the model for them.")
    if len(places) <= SHORT:
        rows = [places[i:i + 1] for i in range(len(places))]
    else:
        pick = torch.randperm(len(places), generator=torch.Generator().manual_seed(SEED))
        rows = [places[pick[:max(1, round(RATE * len(places)))]].sort().values]
    n = len(rows)
    batch = {k: v.expand(n, -1).clone() for k, v in inputs.items()}      # (N, T) each
    labels = torch.full_like(batch["input_ids"], -100)                   # (N, T)
    for r, pos in enumerate(rows):
        labels[r, pos] = ids[pos]
        batch["input_ids"][r, pos] = tokenizer.mask_token_id
    return batch, labels


def describe(labels: torch.Tensor) -> str:
    """'12 tokens of your text, each masked in turn' or '9 tokens of your text masked at once (15 %, seed 0)'."""
    per_copy = (labels != -100).sum(1)                                    # (N,)
    if int(per_copy.max()) == 1:
        return f"{len(labels)} tokens of your text, each masked in turn"
    return f"{int(per_copy.sum())} tokens of your text masked at once ({RATE:.0%}, seed {SEED})"


def _logits(mlm, batch: dict) -> torch.Tensor:
    logits = mlm(**batch).logits                                          # (N, T, V)
    return logits.to(torch.promote_types(logits.dtype, torch.float32))   # fp16/bf16 -> fp32


def loss(mlm, task: tuple[dict, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy of the hidden tokens."""
    batch, labels = task
    return F.cross_entropy(_logits(mlm, batch).flatten(0, 1), labels.flatten(), ignore_index=-100)


def accuracy(mlm, task: tuple[dict, torch.Tensor]) -> float:
    """Share of hidden tokens whose top prediction is the original token."""
    batch, labels = task
    hit = _logits(mlm, batch).argmax(-1) == labels                       # (N, T)
    keep = labels != -100
    return float(hit[keep].float().mean())


def task(encoder, text: str) -> tuple[dict, torch.Tensor]:
    """The masked copies of `text` for an Encoder (models.hf) with an MLM head."""
    inputs, _ = encoder.encode(text)
    return masked(encoder.tokenizer, inputs)


def chunks(masked_task: tuple[dict, torch.Tensor], size: int = 8) -> list[tuple[dict, torch.Tensor]]:
    """The copies cut into batches of `size` (so a progress bar can move)."""
    batch, labels = masked_task
    return [({k: v[i:i + size] for k, v in batch.items()}, labels[i:i + size]) for i in range(0, len(labels), size)]


def text_metric(encoder, text: str):
    """metric(plan) -> masked-token accuracy on `text` with plan's heads gated to 0."""
    t = task(encoder, text)
    return gated_metric(encoder.model, lambda _: accuracy(encoder.mlm, t))


def score_heads(encoder, text: str, n_sentences: int = 24, progress=None) -> tuple:
    """Gradient importance [L, H] of the masked-LM loss on `text`, confidence [L, H] and pattern labels
    from the attention over the first n_sentences built-in sentences."""
    grads = gradient_importance(encoder.model, lambda _, b: loss(encoder.mlm, b), chunks(task(encoder, text)),
                                progress=progress)
    traces = [encoder.attend(a) for a, _ in load_pairs()[:n_sentences]]
    weights, tokens = [t.weights for t in traces], [t.tokens for t in traces]
    return grads, confidence(weights), patterns.labels(patterns.head_stats(weights, tokens))
