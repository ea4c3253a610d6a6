"""Text -> trace or message: the one way a view turns a text into the sidebar model's cached attention.

A text the model cannot take (empty after its tokenizer, wrong alphabet, too long where truncating would
mislead) raises ValueError with one sentence in models; here that sentence is shown as an error and the
caller gets None, so no view writes its own try/except around ui.runtime.cache.trace. It does not show notices,
switch models or stop the script: the caller decides what follows.

    tr = trace_or_error(sel, "The river bank was dirty")
    if tr is None:
        st.stop()
"""
from __future__ import annotations

import streamlit as st

from analysis.trace import AttentionTrace
from limits.errors import UserError
from ui.runtime import cache
from ui.state import Selection


def trace_or_error(sel: Selection, text: str, text_b: str | None = None, new_tokens: int = 0) -> AttentionTrace | None:
    """The cached trace of `text` (and `text_b`) on the sidebar's model, device and dtype, or None after
    st.error with the model's own sentence for a text it cannot use."""
    try:
        return cache.trace(sel.model, sel.device, sel.dtype, text, text_b, new_tokens)
    except UserError as err:
        st.error(str(err))
        return None
