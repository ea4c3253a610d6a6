"""Presenter mode, for a projector: large type, fewer controls, figures sized to fit a 1280×720 screen.

A sidebar toggle bound to ?presenter=true. It changes how things look, never what is computed: the page
gets a style sheet (bigger text, no toolbar, no download buttons or plotly mode bars) and ui.show.plot
passes every figure through `fit`. A link with ?presenter=true opens with the sidebar folded away.
"""
from __future__ import annotations

import streamlit as st

from ui.runtime import streamlit_private
from viz.common import fonts

FIGURE_HEIGHT = 520   # px: a 720 px screen less the browser's bar, a title and a caption
TARGET_HEIGHT = 470   # px: the figure a lesson step's question points to, under the question kept on screen
FONT_SIZE = 18        # px in figures (plotly's default is 12)
MIN_FONT = 16         # px: no text of a figure smaller on a projector (titles, ticks, legends, colour bars, cells)
STYLE = streamlit_private.PRESENTER_STYLE  # styled by data-testid: the one module of private parts


def on() -> bool:
    return bool(st.session_state.get("presenter", False))


def requested() -> bool:
    """Presenter mode before the toggle has run (the page's first lines): from the session or the link."""
    return on() or st.query_params.get("presenter", "").lower() in ("true", "1")


def toggle() -> None:
    """Sidebar control."""
    st.toggle("Presenter mode", key="presenter", bind="query-params",
              help="For a projector: large text, fewer controls, figures sized for a 1280×720 screen.")


def style() -> None:
    """The style sheet, when presenter mode is on (call once per run, after the toggle)."""
    if on():
        st.html(STYLE)


def fit(fig):
    """A figure for the projector: larger type, no text under MIN_FONT px where a figure set a smaller size (panel
    titles, ticks, legends, colour bars, numbers in cells), and at most FIGURE_HEIGHT tall (the Figure itself)."""
    height = fig.layout.height
    fig.update_layout(font=dict(size=FONT_SIZE), height=min(height, FIGURE_HEIGHT) if height else FIGURE_HEIGHT)
    title = fig.layout.title.font
    for font in fonts(fig):
        if font.size is None and font is not title:  # unset: Streamlit's theme would draw ticks and legends at 15 px
            font.size = FONT_SIZE
        elif font.size is not None and font.size < MIN_FONT:
            font.size = MIN_FONT
    return fig
