"""Share links: every widget's value lives in the URL, so the address bar is always a link to exactly this view.

The widgets do that themselves: each is created with `bind="query-params"` and a key (the query parameter's
name), which also keeps its value when the user goes to another view and back. Streamlit drops a bound
parameter whose value the widget cannot take (a layer this model does not have, a word that is not a choice).
This module only reads a link once, on the session's first run, and afterwards says in one notice which of
its parameters were not used: invalid here, unknown, or text cut to the hosting cap. It never writes the URL.

    ?text=I+sat+on+the+river+bank&model=bert&heads_layer=L3&heads_head=H7
"""
from __future__ import annotations

import re

import streamlit as st

import limits

SIDEBAR_KEYS = ("text", "text_b", "model", "hf_spec", "device", "dtype", "image_format", "presenter", "lesson")
_ARRIVED = "_share_arrived"  # session key: the link's parameters, held until the first page has run


def arrived() -> bool:
    """On the session's first run, remember the parameters the link came with (before any widget reads them);
    True on that run."""
    if _ARRIVED in st.session_state:
        return False
    st.session_state[_ARRIVED] = st.query_params.to_dict()
    return True


def link() -> dict[str, str]:
    """The parameters the session's link came with, until the first page has run ({} afterwards)."""
    return dict(st.session_state.get(_ARRIVED) or {})


def unused(known_prefixes: tuple[str, ...]) -> list[str]:
    """After the first page has run: the link's parameters it did not use, each with why; [] on later runs.

    known_prefixes: the key prefixes of every view's widgets (ui.views), so a parameter of another view is
    kept for when that view opens, while a name no view has is dropped from the URL.
    """
    link = st.session_state.get(_ARRIVED)
    if not link:
        return []
    st.session_state[_ARRIVED] = {}
    cap, said = limits.current().text_chars, []
    for key, raw in link.items():
        if key in ("text", "text_b") and len(raw) > cap:
            said.append(f"'{key}' (cut to {cap:,} characters)")
        elif key not in SIDEBAR_KEYS and not key.startswith(known_prefixes):
            said.append(f"'{key[:30]}' (unknown)")
            st.query_params.pop(key, None)
        elif key not in st.query_params and key in st.session_state and not _same(raw, st.session_state[key]):
            said.append(f"'{key[:30]}' ({raw[:30]!r} is not a choice here)")
    return said


def _same(raw: str, value: object) -> bool:
    """Whether a parameter Streamlit dropped was simply the widget's default ('L0' for layer 0, '0.5', 'true')
    rather than a value it could not take. A list (multiselect) is never reported."""
    if isinstance(value, (list, tuple)):
        return True
    if isinstance(value, bool):
        return raw.strip().lower() in (("true", "1") if value else ("false", "0"))
    if isinstance(value, (int, float)):
        try:
            return float(re.sub(r"^[A-Za-z ]+", "", raw)) == value
        except ValueError:
            return False
    return raw == str(value)


def notice(said: list[str]) -> None:
    if said:
        st.warning("Some link parameters were not used: " + "; ".join(said) + ".", icon="🔗")
