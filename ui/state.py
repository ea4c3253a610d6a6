"""The sidebar's choices as one value; pages read it instead of poking at session_state."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

# every view's widget: its value in the URL (a share link) and kept while another view is open
BIND = dict(bind="query-params", persist_state="session")
DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."
DEFAULT_MODEL = "bert"
MODEL_LABELS = {  # registry key -> what the sidebar and the switch buttons call it
    "bert": "BERT · MiniLM-L6 (6 layers × 12 heads)",
    "toy": "Toy self-attention layer",
    "tiny": "Tiny decoder (sorts digits)",
    "seq2seq-bahdanau": "Seq2seq GRU · Bahdanau (dates)",
    "seq2seq-luong": "Seq2seq GRU · Luong (dates)",
    "gpt": "GPT · tiny Llama-style decoder (Python docs)",
    "vit": "ViT · tiny vision transformer (8×8 digits)",
    "seq2seq-transformer": "Seq2seq transformer (dates)",
    "induction": "Induction · 2-layer attention-only (repeated syllables)",
    "hf:": "Other model (folder or hub id)…",
}


@dataclass(frozen=True)
class Selection:
    text: str
    text_b: str | None
    model: str      # registry key, or "hf:<folder or hub id>"
    device: str
    dtype: str


def selection() -> Selection:
    """What the sidebar holds now (defaults before the sidebar has run, e.g. in a page-only test)."""
    s = st.session_state
    model = s.get("model", DEFAULT_MODEL)
    if model == "hf:":
        model = "hf:" + s.get("hf_spec", "").strip()
    text_b = s.get("text_b", "") or ""
    return Selection(
        text=s.get("text", DEFAULT_TEXT),
        text_b=text_b if text_b.strip() else None,
        model=model,
        device=s.get("device", "cpu"),
        dtype=s.get("dtype", "float32"),
    )


def clamp(key: str, lo: float, hi: float) -> None:
    """Keep a kept (URL-bound) slider inside bounds that depend on the input (the step of a shorter text, k for
    fewer tokens): called before the widget, a value outside [lo, hi] is forgotten, so the widget starts again
    at its default instead of raising."""
    value = st.session_state.get(key)
    values = value if isinstance(value, tuple) else (value,)
    if value is not None and not all(lo <= v <= hi for v in values if isinstance(v, (int, float))):
        del st.session_state[key]


def uploaded_table(data: bytes, name: str, slot: str):
    """An uploaded table (data.labelled.read_table) read once per session and kept in this session only, like the
    file: session_state[slot] holds (digest, table); a different upload replaces it."""
    import hashlib

    import limits
    from data.labelled import read_table

    digest, held = (hashlib.sha256(data).hexdigest(), name), st.session_state.get(slot)
    if held is None or held[0] != digest:
        held = digest, read_table(data, name, limits.current().pruning_upload_bytes)
        st.session_state[slot] = held
    return held[1]
