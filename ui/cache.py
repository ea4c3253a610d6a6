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
def trace(name: str, device: str, dtype: str, text: str, text_b: str | None) -> AttentionTrace:
    """The model's attention for this input; ValueError (not cached) for unusable input."""
    return model(name, device, dtype).attend(text, text_b)
