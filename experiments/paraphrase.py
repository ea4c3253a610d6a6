"""The built-in paraphrase task for encoders without an MLM head (MiniLM): loss and metric.

121 sentence pairs written for this app (analysis/data/paraphrases.tsv, tab-separated). Each pair
(a, b) also gets a scrambled copy s of b: the same words in a shuffled order. A bag of words
cannot tell b from s, so s is the distractor that needs attention; without it, paraphrase
retrieval stays near 98 % with every head of MiniLM switched off. A sentence is embedded by
mean-pooling the last hidden states over its real tokens and l2-normalising.
Loss: contrastive with in-batch negatives (InfoNCE: a_i against every b_j and s_j of its batch,
cosine × 20 as in sentence-transformers). Metric: retrieval accuracy, the share of a_i whose
nearest candidate among all b and s is its own paraphrase b_i.
Does not fine-tune anything; the model's gates (models.gates) decide which heads take part.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from analysis import patterns
from data.paraphrases import load_pairs, scramble, split
from experiments.importance import confidence, gated_metric, gradient_importance

SCALE = 20.0


def encode(tokenizer, pairs: list, device: str = "cpu") -> dict:
    """One padded batch holding every a, then every b, then every scrambled b (3N sentences)."""
    sentences = [a for a, _ in pairs] + [b for _, b in pairs] + [scramble(b) for _, b in pairs]
    enc = tokenizer(sentences, padding=True, truncation=True, max_length=64, return_tensors="pt")
    return {k: v.to(device) for k, v in enc.items()}


def batches(tokenizer, pairs: list, size: int, device: str = "cpu") -> list[dict]:
    """Pairs cut into encoded batches of `size` pairs (the last may be smaller)."""
    return [encode(tokenizer, pairs[i:i + size], device) for i in range(0, len(pairs), size)]


def embed(model, inputs: dict) -> torch.Tensor:
    """Mean of the last hidden states over real tokens, l2-normalised: (N, D)."""
    hidden = model(**inputs).last_hidden_state                          # (N, T, D)
    keep = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)      # (N, T, 1)
    pooled = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1)          # (N, D)
    return F.normalize(pooled.to(torch.promote_types(pooled.dtype, torch.float32)), dim=-1)  # fp16/bf16 -> fp32


def similarities(model, inputs: dict) -> torch.Tensor:
    """Cosine of each a_i with every candidate [b_1..b_N, s_1..s_N]: (N, 2N)."""
    e = embed(model, inputs)                                            # (3N, D)
    n = len(e) // 3
    return e[:n] @ e[n:].T                                              # (N, 2N)


def loss(model, inputs: dict) -> torch.Tensor:
    """InfoNCE with in-batch and scrambled negatives: a_i should pick b_i among all b and s."""
    logits = SCALE * similarities(model, inputs)                        # (N, 2N)
    return F.cross_entropy(logits, torch.arange(len(logits), device=logits.device))


def accuracy(model, inputs: dict) -> float:
    """Share of a_i whose most similar candidate among all b and s is b_i."""
    sim = similarities(model, inputs)                                   # (N, 2N)
    return float((sim.argmax(1) == torch.arange(len(sim), device=sim.device)).float().mean())


def task(tokenizer, n_score: int, n_eval: int, batch: int = 8, device: str = "cpu") -> tuple[list[dict], dict | None]:
    """(batches that score importance, one batch that measures accuracy or None) from the built-in pairs."""
    score, held = split(load_pairs(), n_score, n_eval)
    return batches(tokenizer, score, batch, device), encode(tokenizer, held, device) if held else None


def held_out_metric(model, tokenizer, n_eval: int, device: str = "cpu"):
    """metric(plan) -> retrieval accuracy on n_eval held-out pairs with plan's heads gated to 0."""
    held = task(tokenizer, 0, n_eval, device=device)[1]
    return gated_metric(model, lambda m: accuracy(m, held))


def score_heads(encoder, n_score: int, n_sentences: int = 24, progress=None) -> tuple:
    """For an Encoder (models.hf): gradient importance [L, H] from n_score pairs, confidence [L, H] and
    pattern labels from the attention of the first n_sentences built-in sentences."""
    grads = gradient_importance(encoder.model, loss, task(encoder.tokenizer, n_score, 0, device=encoder.device)[0],
                                progress=progress)
    traces = [encoder.attend(a) for a, _ in load_pairs()[:n_sentences]]
    weights, tokens = [t.weights for t in traces], [t.tokens for t in traces]
    return grads, confidence(weights), patterns.labels(patterns.head_stats(weights, tokens))
