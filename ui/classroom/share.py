"""Share links: every widget's value lives in the URL, so the address bar is always a link to exactly this view.

The widgets do that themselves: each is created with `bind="query-params"` and a key (the query parameter's
name), which also keeps its value when the user goes to another view and back. Streamlit drops a bound
parameter whose value the widget cannot take (a layer this model does not have, a word that is not a choice)
and keeps a parameter no widget on screen reads. This module only reads a link once, on the session's first
run, and afterwards says in one notice what of it was not used: a page no view has (Streamlit then runs the
home page), a value the widget could not take or took only in part, a setting of the open view that is not
on screen as the link sets it, a name no view has, or text cut to the hosting cap. It never writes the URL
but to drop a parameter it reports, and to split `model=hf:<folder or hub id>` into the two sidebar widgets'
parameters (`model=hf:` and `hf_spec=<folder or hub id>`), as the sidebar writes such a model.

    ?text=I+sat+on+the+river+bank&model=bert&heads_layer=L3&heads_head=H7
"""
from __future__ import annotations

import re

import streamlit as st

import limits
from ui.runtime import streamlit_private

SIDEBAR_KEYS = ("text", "text_b", "model", "hf_spec", "device", "dtype", "image_format", "presenter", "lesson")
_ARRIVED = "_share_arrived"  # session key: the link's parameters, each with all its values, until the first page ran


def arrived() -> bool:
    """On the session's first run, remember the parameters the link came with (before any widget reads them);
    True on that run."""
    if _ARRIVED in st.session_state:
        return False
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    inline = (params.get("model") or [""])[-1]
    if inline.startswith("hf:") and inline.strip() != "hf:" and not params.get("hf_spec"):
        params["model"], params["hf_spec"] = ["hf:"], [inline[3:].strip()]
        for key, value in (("model", "hf:"), ("hf_spec", inline[3:].strip())):
            st.session_state[key] = value  # the widgets take it over the link's value, and write it in the URL
    st.session_state[_ARRIVED] = params
    return True


def link() -> dict[str, str]:
    """The parameters the session's link came with (a repeated one: its last value), until the first page has run
    ({} afterwards)."""
    return {key: values[-1] for key, values in (st.session_state.get(_ARRIVED) or {}).items()}


def claim_missing_page(known: set[str]) -> str | None:
    """Call before st.navigation: when the address names no view ('nosuchview' for /nosuchview; `known` holds
    every view's url path), have Streamlit run the home page as if it had been asked for, so that its own "Page
    not found" dialog does not open beside the link's notice, and return the name; else None. Reads and sets
    Streamlit's pages manager (ui.runtime.streamlit_private; a browser test opens such an address)."""
    asked = streamlit_private.intended_page_name()
    if not asked or asked in known:
        return None
    streamlit_private.run_default_page_instead()
    return asked


def unused(known_prefixes: tuple[str, ...], view_prefix: str = "", pending: str = "") -> list[str]:
    """After the first page has run: the link's parameters it did not use, each with why; [] on later runs.

    known_prefixes: the key prefixes of every view's widgets (ui.views), so a parameter of another view is
    kept for when that view opens, while a name no view has is dropped from the URL.
    view_prefix: the open view's prefix once it has run to its end ('' otherwise): a parameter of it that no
    widget on screen took (the toy's d_model while BERT is picked) is dropped from the URL, with why.
    pending: the open view's prefix when it stopped before its end: a parameter of it whose widget has not been
    drawn yet (a Column box that appears once a file is uploaded) is kept for a later run to decide.
    """
    link = st.session_state.get(_ARRIVED)
    if not link:
        return []
    cap, said, kept = limits.current().text_chars, [], {}
    for key, values in link.items():
        raw, name = values[-1], f"'{key[:30]}'"
        if key in ("text", "text_b") and len(raw) > cap:
            said.append(f"{name} (cut to {cap:,} characters)")
        elif key not in SIDEBAR_KEYS and not key.startswith(known_prefixes):
            said.append(f"{name} (unknown)")
            st.query_params.pop(key, None)
        elif view_prefix and key.startswith(view_prefix) and key not in st.session_state:
            said.append(f"{name} (no such setting on screen here)")
            st.query_params.pop(key, None)
        elif pending and key.startswith(pending) and key not in st.session_state:
            kept[key] = values  # its widget is not drawn yet: a later run decides
        elif key in st.query_params:
            if st.query_params.get_all(key) != values:  # taken in part: Streamlit wrote what it kept
                said.append(f"{name} ({_show(values)} is not all a choice here: {_show(st.query_params.get_all(key))} "
                            "is used)")
        elif key in st.session_state and not _same(values, st.session_state[key]):
            said.append(f"{name} ({_show(values)} is not a choice here)")
    st.session_state[_ARRIVED] = kept
    return said


def _show(values: list[str]) -> str:
    """['a'] -> "'a'"; ['a', 'b'] -> "'a' + 'b'", each cut to 30 characters."""
    return " + ".join(repr(v[:30]) for v in values)


def _same(values: list[str], value: object) -> bool:
    """Whether a parameter Streamlit dropped was simply the widget's default ('L0' for layer 0, '0.5', 'true';
    a multiselect's default choices, each as its text) rather than a value it could not take."""
    if isinstance(value, (list, tuple)):
        return [v for v in values if v] == [str(v) for v in value]
    raw = values[-1]
    if isinstance(value, bool):
        return raw.strip().lower() in (("true", "1") if value else ("false", "0"))
    if isinstance(value, (int, float)):
        try:
            return float(re.sub(r"^[A-Za-z ]+", "", raw)) == value
        except ValueError:
            return False
    return raw == str(value)


def notice(said: list[str], page: str | None = None) -> None:
    """One warning for the whole link: the page no view has (see claim_missing_page), then the parameters not used."""
    parts = [f"There is no view at /{page[:40]}, so this is the home page."] if page else []
    if said:
        parts.append("Some link parameters were not used: " + "; ".join(said) + ".")
    if parts:
        st.warning(" ".join(parts), icon="🔗")
