"""Cached model loads (one per name/device/dtype per server) and cached traces (per input)."""
from __future__ import annotations

import streamlit as st

import models
from analysis.trace import AttentionTrace
from models.devices import resolve


@st.cache_resource(show_spinner="Loading the model…", max_entries=6)
def model(name: str, device: str, dtype: str):
    """models.load on a device that really works (resolve falls back to cpu and says why)."""
    device, dtype, notices = resolve(device, dtype)
    m = models.load(name, device, dtype)
    m.notices = tuple(getattr(m, "notices", ())) + notices
    return m


@st.cache_data(show_spinner="Running the model…", max_entries=64)
def trace(name: str, device: str, dtype: str, text: str, text_b: str | None, new_tokens: int = 0) -> AttentionTrace:
    """The model's attention for this input (a decoder's with `new_tokens` written after it); ValueError (not
    cached) for unusable input."""
    m = model(name, device, dtype)
    return m.attend(text, text_b, new_tokens=new_tokens) if new_tokens else m.attend(text, text_b)
