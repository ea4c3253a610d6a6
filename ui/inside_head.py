"""Pieces of the Inside-a-head view: one head's X, Q, K, V for the toy, the tiny decoder and a Hugging Face
encoder or decoder (cached), and its side sections: why √d_k, what the causal mask does, and one query·key split
per dimension (bertviz's neuron view)."""
from __future__ import annotations

import numpy as np
import streamlit as st

from analysis.inside_head import entropy_vs_dk, steps, window
from analysis.tokens import readable
from analysis.trace import HeadQKV
from ui import show, state
from ui.runtime import cache
from viz.inside_head import entropy_figure, mask_effect, neuron_figure


@cache.memo("models")
def toy(settings: tuple, device: str, dtype: str):
    from models.toy import build

    return build(*settings, device=device, dtype=dtype)


@cache.memo("results")
def toy_head(settings: tuple, device: str, dtype: str, text: str, head: int) -> tuple[HeadQKV, str]:
    model = toy(settings, device, dtype)
    return model.head_qkv(text, 0, head), model.label


@cache.memo("results")
def tiny_head(device: str, dtype: str, digits: str, layer: int, head: int) -> HeadQKV:
    return cache.model("tiny", device, dtype).head_qkv(digits, layer, head)


@cache.memo("results")
def induction_head(device: str, dtype: str, text: str, layer: int, head: int, name: str = "induction") -> HeadQKV:
    """One head of the induction model; `name` picks a checkpoint ('induction@1100'), the last by default."""
    return cache.model(name, device, dtype).head_qkv(text, layer, head)


@cache.memo("results")
def hf_head(name: str, device: str, dtype: str, text: str, text_b: str | None, layer: int, head: int) -> HeadQKV:
    return cache.model(name, device, dtype).head_qkv(text, layer, head, text_b)


@cache.memo("results")
def entropy_curves() -> dict:
    return entropy_vs_dk()


def scale_section() -> None:
    """Variance of q·k and softmax entropy against d_k, with and without the scale, measured on random q, k."""
    curves = entropy_curves()
    show.plot(entropy_figure(curves), "inside_head_scale")
    st.markdown(
        f"With query and key entries of variance 1, q·k sums d_k products and has variance d_k "
        f"(measured: {curves['var_unscaled'][-1]:.0f} at d_k = {curves['d_k'][-1]}). Without the scale, softmax "
        f"rows collapse onto one key: mean largest weight {curves['max_weight_unscaled'][-1]:.2f} at "
        f"d_k = {curves['d_k'][-1]}, and gradients through it vanish. Dividing by √d_k keeps the variance at 1 and "
        f"the entropy near {curves['entropy_scaled'][-1]:.2f} nats for every d_k (uniform: "
        f"{curves['max_entropy']:.2f}).")


def mask_note(data: HeadQKV) -> None:
    """Under the steps: what the mask step does for this head (nothing, the causal mask, or a sliding window too)."""
    if not data.causal:
        st.caption("No causal mask here: the mask step leaves the scores unchanged.")
    elif data.window:
        st.caption(f"This layer attends within a sliding window of {data.window} tokens: the mask step also hides "
                   f"every key {data.window} or more positions before its query.")


def mask_section(data: HeadQKV, tokens: list[str], start: int, size: int) -> None:
    """The head's softmax without and with the causal mask, on the tokens shown (a window of `size` from start)."""
    bidir, causal = (window(steps(data.x, data.q, data.k, data.v, data.scale, c, data.window), start,
                            size)["softmax"] for c in (False, True))
    show.plot(mask_effect(bidir, causal, tokens), "inside_head_mask")
    st.caption("Masked scores become −∞, so they get weight 0 and each row renormalises over the tokens to its "
               "left. " + ("This model is a decoder, so the right panel is what it really uses."
                          if data.causal else "This model is bidirectional: the right panel is what a mask would "
                                                 "do."))


def neuron_section(data: HeadQKV) -> None:
    """For one query and one key: q·k as its per-dimension products (positive and negative), summing to the score."""
    tokens = data.tokens
    label = lambda i: f"{i}: {readable(tokens[i])}"  # noqa: E731
    state.clamp("ih_nq", 0, len(tokens) - 1)
    state.clamp("ih_nk", 0, len(tokens) - 1)
    c = st.columns(2)
    i = c[0].selectbox("query token", range(len(tokens)), len(tokens) - 1, key="ih_nq", format_func=label)
    j = c[1].selectbox("key token", range(len(tokens)), 0, key="ih_nk", format_func=label)
    q, k = np.asarray(data.q[i], np.float64), np.asarray(data.k[j], np.float64)
    score = float(q @ k) / (np.sqrt(len(q)) if data.scale else 1.0)
    show.plot(neuron_figure(q, k, tokens[i], tokens[j], score), "inside_head_neuron", key="ih_neuron_fig")
    masked = data.causal and j > i
    st.caption(f"{len(q)} products q_d·k_d; their sum is the score q·k, the cell ({i}, {j}) of QKᵀ"
               + (", scaled by 1/√d_k." if data.scale else ".")
               + (" The causal mask then sets it to −∞: this key is after the query." if masked else "")
               + " Large products of one sign show the few dimensions that decide whether this query finds this key.")
