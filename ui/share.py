"""Share links: the sidebar and each page's own choices mirrored in the URL's query parameters.

restore() runs once per browser session, before any widget exists: every known parameter that
parses is put in st.session_state, where the widgets read it; anything malformed or unknown is
ignored and named in one notice, never an error. publish() writes the current choices back on
every run, so the address bar is always a link to exactly this view. A page checks what only it
knows (e.g. how many layers this model has) with in_range() before drawing its widget.

Views whose widgets bind themselves to the URL (bind="query-params", keys starting with a prefix in
BOUND) keep their parameters there on their own: restore() and publish() leave those alone.
Does not: store anything on the server, shorten links, or carry uploaded files.
Example: ?text=I+sat+on+the+river+bank&model=bert&layer=3&head=7
"""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from models import HF_PREFIX, available
from models.devices import available_devices

MAX_TEXT = 20_000  # the sidebar's text_area max_chars
BOUND = ("prune_",)  # key prefixes of widgets bound to the URL by Streamlit itself


def _text(raw: str) -> str:
    if len(raw) > MAX_TEXT:
        raise ValueError(f"longer than {MAX_TEXT} characters")
    return raw


def _index(raw: str) -> int:
    if not raw.isdigit():
        raise ValueError("not a whole number ≥ 0")
    return int(raw)


def _bool(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise ValueError("not 0 or 1")
    return raw == "1"


def _indices(raw: str) -> list[int]:
    return [_index(part) for part in raw.split(",")] if raw else []


def _choice(options: Callable[[], list[str]] | tuple[str, ...]) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        allowed = options() if callable(options) else options
        if raw not in allowed:
            raise ValueError("not one of " + ", ".join(allowed))
        return raw
    return parse


# query parameter (== session_state key) -> parser; a page adds its own keys here
PARAMS: dict[str, Callable[[str], object]] = {
    "text": _text,
    "text_b": _text,
    "model": _choice(lambda: available() + [HF_PREFIX]),
    "hf_spec": _text,
    "device": _choice(available_devices),
    "layer": _index,
    "head": _index,
    "hide_special": _bool,
    "scale": _choice(("per head", "shared")),
    "bertviz_on": _bool,
    "bertviz_view": _choice(("Head view", "Model view")),
    "cmp_a": _text,
    "cmp_b": _text,
    "cmp_layer": _index,
    "cmp_head": _index,
    "cmp_tokens": _indices,
}


def _format(value: object) -> str | None:
    """Session value -> query string value: True -> '1', [2, 5] -> '2,5', '' -> None (left out)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    text = str(value)
    return text if text else None


def restore() -> None:
    """Once per session: link parameters into session_state; a notice lists what was ignored."""
    if st.session_state.get("_share_restored"):
        return
    st.session_state["_share_restored"] = True
    ignored = []
    for key in st.query_params:
        raw = st.query_params[key]
        if key.startswith(BOUND):
            continue
        if key not in PARAMS:
            ignored.append(f"'{key}' (unknown)")
            continue
        try:
            st.session_state[key] = PARAMS[key](raw)
        except ValueError as why:
            ignored.append(f"'{key}' ({why})")
    if ignored:
        st.warning("Some link parameters were ignored: " + "; ".join(ignored) + ".", icon=":material/link_off:")


def publish() -> None:
    """Write the current choices into the URL (only when they changed)."""
    wanted = {}
    for key in PARAMS:
        if key in st.session_state:
            value = _format(st.session_state[key])
            if value is not None:
                wanted[key] = value
    now = st.query_params.to_dict()
    for key in now:
        if key not in wanted and not key.startswith(BOUND):
            del st.query_params[key]
    for key, value in wanted.items():
        if now.get(key) != value:
            st.query_params[key] = value


def in_range(key: str, n: int, what: str) -> None:
    """Drop from session_state[key] what is not an index below n (layer 9 of 6), with a notice."""
    value = st.session_state.get(key)
    if value is None:
        return
    values = value if isinstance(value, list) else [value]
    bad = [v for v in values if not (isinstance(v, int) and 0 <= v < n)]
    if not bad:
        return
    if isinstance(value, list):
        st.session_state[key] = [v for v in values if v not in bad]
    else:
        del st.session_state[key]
    st.info(f"There is no {what} {', '.join(map(str, bad))} here (0–{n - 1}); it was left out.",
            icon=":material/link_off:")
