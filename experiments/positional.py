"""What the Positional encodings view reads from a loaded encoder: its learned position table and a sentence's
static word vectors (embedding rows: no positions, no layers). Both read weights; neither runs the model, changes
it or draws; analysis/positional.py does the arithmetic and viz/positional.py the figures."""
from __future__ import annotations

import numpy as np
import torch

DEMO_TOKENS = 24  # the permutation demo's heatmaps: one readable row per token


def learned_table(encoder) -> np.ndarray | None:
    """The encoder's learned absolute position table [P, D] as float32 (embeddings.position_embeddings), or None
    if it has none (RoPE, relative positions)."""
    table = getattr(getattr(encoder.model, "embeddings", None), "position_embeddings", None)
    return None if table is None else table.weight.detach().float().cpu().numpy()  # (P, D)


def word_vectors(encoder, sentence: str) -> tuple[list[str], torch.Tensor, int]:
    """The sentence's first DEMO_TOKENS tokens, their static word-embedding rows [T, D] in float32, and how many
    tokens the whole sentence has: 'the man walked the dog' -> (['the', 'man', 'walked', 'the', 'dog'], ..., 5)."""
    ids = encoder.tokenizer(sentence, add_special_tokens=False)["input_ids"]
    rows = encoder.model.get_input_embeddings().weight[ids[:DEMO_TOKENS]].detach().float().cpu()  # (T, D)
    return encoder.tokenizer.convert_ids_to_tokens(ids[:DEMO_TOKENS]), rows, len(ids)
