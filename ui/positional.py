"""Pieces of the Positional encodings view: an encoder's learned position table and a sentence's static word
vectors (cached), and figures laid side by side. Reads models; draws nothing of its own."""
import numpy as np
import streamlit as st
import torch

from analysis import positional as P
from ui import show
from ui.runtime import cache

DEMO_TOKENS = 24  # the permutation demo's heatmaps: one readable row per token


@cache.memo("results")
def learned_table(name: str, device: str, dtype: str) -> np.ndarray | None:
    """The encoder's learned position table [P, D] as float32, or None if it has none."""
    table = getattr(getattr(cache.model(name, device, dtype).model, "embeddings", None), "position_embeddings", None)
    return None if table is None else table.weight.detach().float().cpu().numpy()


@cache.memo("results")
def word_vectors(name: str, device: str, dtype: str, sentence: str) -> tuple[list[str], torch.Tensor, int]:
    """The sentence's first DEMO_TOKENS tokens, their static word-embedding rows [T, D] (no positions, no
    layers), and how many tokens the whole sentence has."""
    enc = cache.model(name, device, dtype)
    ids = enc.tokenizer(sentence, add_special_tokens=False)["input_ids"]
    rows = enc.model.get_input_embeddings().weight[ids[:DEMO_TOKENS]].detach().float().cpu()  # (T, D)
    return enc.tokenizer.convert_ids_to_tokens(ids[:DEMO_TOKENS]), rows, len(ids)


@cache.memo("results")
def structure(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A position table's PC1/PC2 coordinates [P, 2], their share of variance [2] and its cosine similarities
    [P, P], kept per table (the Learned tab redraws on every rerun)."""
    coords, explained = P.principal_components(table, 2)
    return coords, explained, P.cosine_similarity(table)


def side_by_side(*figs) -> None:
    """(figure, name) pairs in equal columns; the name is also the element key, unique on this page."""
    for col, (fig, name) in zip(st.columns(len(figs)), figs):
        with col:
            show.plot(fig, name, key=f"pos_{name}")
