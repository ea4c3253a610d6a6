"""Going from one view to another with chosen settings: a button that switches page with them.

A view's settings are its widgets' values, kept in session state under their keys and in the URL under
the same names (bind="query-params"). `go` sets some of them and switches page in this session; it never touches
a widget that is on screen now.
"""
from __future__ import annotations

import streamlit as st

from ui.views import VIEWS

_GO = "_links_go"  # session key: (view, its parameters) a callback asked for, switched to on the next run
_SEEN = "_links_seen"  # session key: the address's sidebar parameters as the last run ended
SIDEBAR_VALUES = ("model", "hf_spec", "text", "text_b")  # the sidebar's values a link sets (an example, a step)


def path(stem: str) -> str:
    """'heads' -> 'views/heads.py', the form st.switch_page and st.page_link take."""
    return next(v.path for v in VIEWS if v.stem == stem)


def request(stem: str, params: dict[str, str], sidebar: dict | None = None) -> None:
    """For a button's on_click: open view `stem` with its widgets set by `params`, written as in the URL
    ({"heads_layer": "L5"}), and the sidebar's widgets set to `sidebar` ({"model": "tiny"}) at once.

    The view's values travel as the switch's query parameters: a widget that is not on screen takes them
    from the URL, and the address bar shows them. The sidebar's widgets are on screen in every run, so
    they are set through session state (a bound parameter cannot be set through the URL from Python)."""
    st.session_state.update(sidebar or {})
    st.session_state[_GO] = (stem, dict(params))


def follow(running: str) -> None:
    """Make the switch a callback asked for, unless its view is the one running: `running` is the url_path
    of the page st.navigation returned ('' for home). Call it between st.navigation and the page's run."""
    stem, params = st.session_state.pop(_GO, (None, None))
    if stem and stem != (running or "home"):
        st.switch_page(path(stem), query_params=params)


def open_head(layer: int, head: int, part: str | None = None) -> None:
    """Button callback: the Heads view with this layer and head picked (and an encoder-decoder's stack: "encoder"
    or "decoder", when given)."""
    from ui.family import PART_LABELS  # here, not at the top: the first page paints before ui.family (torch) loads

    chosen = {"heads_part": PART_LABELS[part]} if part else {}  # a bound radio's URL value is its label
    request("heads", {"heads_layer": f"L{layer}", "heads_head": f"H{head}", **chosen})


def take(models: list[str], cap: int) -> None:
    """Every run but a session's first, before the sidebar: the values a page link clicked in this session (an
    example) brought for the sidebar, set as the link opened fresh would set them.

    Streamlit's frontend opens such a link with the address's own parameters first and the link's after them
    (`?text=mine&text=example`), and a sidebar widget on screen keeps its own value: so the last value of a
    sidebar parameter that changed since the last run is put in session state (the widget then writes it once
    in the address, or not at all where it is the default). A new text without a second sentence clears the second.
    `models`: the Model box's options (another value is left for the link's notice); `cap`: the text's limit."""
    if _SEEN not in st.session_state:
        return
    seen, took = st.session_state[_SEEN], set()
    for key in SIDEBAR_VALUES:
        values = st.query_params.get_all(key)
        if not values or values == seen.get(key):
            continue  # a new value is set even where the widget has it: the widget then writes it once, or not at all
                      # when it is the default, as the same link opened fresh
        if key == "model" and values[-1] not in models:
            continue
        st.session_state[key] = values[-1][:cap] if key.startswith("text") else values[-1]
        took.add(key)
    if "text" in took and "text_b" not in took:
        st.session_state["text_b"] = ""


def remember() -> None:
    """At the end of every run: the address's sidebar parameters, for `take` on the next run."""
    st.session_state[_SEEN] = {key: st.query_params.get_all(key) for key in SIDEBAR_VALUES}
