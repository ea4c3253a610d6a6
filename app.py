"""Attention Explorer: the frame. Navigation over views/ and the shared sidebar; nothing heavy at import."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

import limits
from models import HF_PREFIX, available
from models.devices import available_devices, dtypes_for
from ui import share
from ui.export import image_format_picker
from ui.state import DEFAULT_MODEL, DEFAULT_TEXT
from ui.views import present

ROOT = Path(__file__).parent

MODEL_LABELS = {
    "bert": "BERT · MiniLM-L6 (6 layers × 12 heads)",
    "toy": "Toy self-attention layer",
    "tiny": "Tiny decoder (sorts digits)",
    "seq2seq-bahdanau": "Seq2seq GRU · Bahdanau (dates)",
    "seq2seq-luong": "Seq2seq GRU · Luong (dates)",
    HF_PREFIX: "Other encoder (folder or hub id)…",
}


def sidebar() -> None:
    """The inputs every view shares; their keys are the contract (text, text_b, model, device)."""
    caps = limits.current()
    st.session_state.setdefault("text", DEFAULT_TEXT)  # not value=: a share link may have set it already
    st.session_state.setdefault("text_b", "")
    with st.sidebar:
        st.text_area("Text", key="text", height=100, max_chars=caps.text_chars)
        st.text_input("Second sentence (optional)", key="text_b",
                      help="For BERT: builds a sentence pair [CLS] A [SEP] B [SEP] with token_type_ids.")
        options = available() + [HF_PREFIX]
        st.selectbox("Model", options, index=options.index(DEFAULT_MODEL) if DEFAULT_MODEL in options else 0,
                     key="model", format_func=lambda k: "Other encoder (hub id)…" if k == HF_PREFIX
                     and not caps.local_models else MODEL_LABELS.get(k, k))
        if st.session_state.get("model") == HF_PREFIX:
            where = "Folder or hub id" if caps.local_models else "Hub id"
            st.text_input(where, key="hf_spec", placeholder="e.g. ./my-bert or bert-base-uncased"
                          if caps.local_models else "e.g. bert-base-uncased",
                          help="Any BERT-like encoder with .safetensors weights; a hub id needs a network.")
        devices = available_devices()
        if st.session_state.get("device", devices[0]) not in devices:  # e.g. set by a link from another machine
            st.caption(f"Device {str(st.session_state['device'])[:20]!r} is not available here; using cpu.")
            st.session_state["device"] = devices[0]
        st.selectbox("Device", devices, key="device")
        dtypes = dtypes_for(st.session_state.get("device", "cpu"))
        if len(dtypes) > 1:
            st.selectbox("Precision", dtypes, key="dtype")
        else:
            st.session_state["dtype"] = dtypes[0]
        image_format_picker()


pages = [st.Page(str(ROOT / v.path), title=v.title, icon=v.icon, default=(v.stem == "home")) for v in present()]
st.set_page_config(page_title="Attention Explorer", page_icon=":material/visibility:", layout="wide")
share.restore()
sidebar()
share.publish()
st.navigation(pages).run()
