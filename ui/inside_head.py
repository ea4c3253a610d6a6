"""Cached pieces of the Inside-a-head view: one head's X, Q, K, V for the toy, the tiny decoder and a Hugging
Face encoder or decoder, and the entropy-against-d_k curves. Computes and keeps; the view draws."""
from __future__ import annotations

import streamlit as st

from analysis.inside_head import entropy_vs_dk
from ui import cache


@cache.memo("models")
def toy(settings: tuple, device: str, dtype: str):
    from models.toy import build

    return build(*settings, device=device, dtype=dtype)


@cache.memo("results")
def toy_head(settings: tuple, device: str, dtype: str, text: str, head: int) -> tuple[dict, str]:
    model = toy(settings, device, dtype)
    return model.head_qkv(text, 0, head), model.label


@cache.memo("results")
def tiny_head(device: str, dtype: str, digits: str, layer: int, head: int) -> dict:
    return cache.model("tiny", device, dtype).head_qkv(digits, layer, head)


@cache.memo("results")
def hf_head(name: str, device: str, dtype: str, text: str, text_b: str | None, layer: int, head: int) -> dict:
    return cache.model(name, device, dtype).head_qkv(text, layer, head, text_b)


@st.cache_data
def entropy_curves() -> dict:
    return entropy_vs_dk()
