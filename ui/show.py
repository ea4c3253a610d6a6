"""How pages speak to the user: one clear sentence for problems, notices, explanations, figures."""
from __future__ import annotations

import contextlib

import plotly.graph_objects as go
import streamlit as st

from analysis.trace import AttentionTrace
from limits.errors import UserError
from ui.classroom import lesson, presenter
from ui.export import image_format
from ui.family import switch, task_note
from ui.runtime import cache, streamlit_private
from ui.state import Selection, selection
from ui.trace_text import trace_or_error
from viz.common import labels_never_hidden, readable_text
from viz.describe import as_tables, describe

PLOT_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 3},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


def current_trace(sel: Selection | None = None) -> AttentionTrace | None:
    """The trace for the sidebar's input, or None after telling the user what to do (for a model that reads
    images: why not, and buttons that switch to a text model)."""
    sel = sel or selection()
    if not sel.text.strip():
        st.info("Type a sentence in the sidebar to see its attention.")
        return None
    try:
        model = cache.model(sel.model, sel.device, sel.dtype)
        if model.family == "vision":
            switch("This model reads images, not text: the Vision view shows it; here, pick a text model.",
                   ["bert", "gpt", "tiny"], "show")
            return None
        notices = tuple(model.notices)
        task_note(sel.model, {"text": sel.text}, "show")
    except UserError as err:
        st.error(str(err))
        return None
    tr = trace_or_error(sel, sel.text, sel.text_b)
    if tr is None:
        return None
    for note in notices + tr.notices:
        st.warning(note)
    return tr


def notices(model) -> None:
    """What the user should know about the model's load (a hybrid's: which of its layers L0, L1, ... are)."""
    for note in model.notices:
        st.warning(note)


def explain(idea: str, math: str, code: str) -> None:
    """The idea in words, the formula in LaTeX, the line of torch that computes it."""
    with st.expander("How it works: idea · math · code", expanded=False):
        st.markdown(idea)
        st.markdown(f"$\\displaystyle {math}$")  # inline: KaTeX's display box scrolls, out of a keyboard's reach
        st.code(code, language="python", wrap_lines=True)


def figure(build, *args) -> go.Figure:
    """build(*args), a viz function's Figure, built once per server for these arguments: kept in the results store
    as its plain dict and handed out as a fresh Figure of it (made without plotly's validation, which the first
    build already did), so a page seen again costs a copy, not a build, and every number in it is the same. Each
    call gets its own Figure: plot() marks and restyles it in place without touching the kept one.

        show.plot(show.figure(V.online_state, ms, ls, rows, step), "tiled_state")
    """
    return go.Figure(_figure_dict(build, args), _validate=False)


@cache.memo("results")
def _figure_dict(build, args: tuple) -> dict:
    return build(*args).to_dict()


def plot(fig, name: str, key: str | None = None, alt: str | None = None, table=False,
         min_width: int | None = None, **kwargs):
    """Show a plotly figure; its camera button saves a sharp PNG (or SVG, per the sidebar) named after the view.
    A screen reader hears `alt`, by default a sentence read from the figure's own data (viz.describe). Chart text
    gets a colour that reads on the page (viz.common.readable_text), unless the visitor's theme is dark. With
    table=True, the figure's numbers follow it as tables, folded (viz.describe.as_tables: one per panel; not in
    presenter mode); table may also be the DataFrame to show there instead. In
    presenter mode the figure gets larger type and fits a 1280×720 screen. With min_width (px), a narrow screen (a
    phone, a 400 % zoom) scrolls the figure sideways instead of squeezing it below that width."""
    options = dict(PLOT_CONFIG["toImageButtonOptions"], filename=name, format=image_format())
    config = dict(PLOT_CONFIG, toImageButtonOptions=options)
    if presenter.on():
        fig = presenter.fit(fig)
    fig = lesson.mark(fig, name)  # where a lesson step's question points, for the teacher
    if st.context.theme.type != "dark":  # light, or not known yet (a session's first run): the default theme
        readable_text(fig)
    kwargs.update(config=config, key=key, width="stretch", alt=alt or describe(fig))
    box = st.container(key=f"wide_{key or name}") if min_width else None
    if box is not None:
        box.html(streamlit_private.min_width_style(f"wide_{key or name}", min_width))
    if lesson.is_target(name):  # on the projector: scrolled into view under the question, once
        fig.update_layout(height=min(fig.layout.height or presenter.TARGET_HEIGHT, presenter.TARGET_HEIGHT))
        with box or contextlib.nullcontext(), st.container(key="lesson_target"):
            shown = st.plotly_chart(labels_never_hidden(fig), **kwargs)
        st.html(streamlit_private.SCROLL_TO_LESSON_TARGET, unsafe_allow_javascript=True)
    else:
        shown = (box or st).plotly_chart(labels_never_hidden(fig), **kwargs)
    tables = {} if presenter.on() or table is False else as_tables(fig) if table is True else {"": table}
    if tables:
        with st.expander("The numbers, as a table" if len(tables) == 1 else "The numbers, as tables"):
            for title, numbers in tables.items():
                if title:
                    st.markdown(f"**{title}**")
                st.dataframe(numbers)
    return shown


def head_picker(n_layers: int, n_heads: int, start: tuple[int, int], key: str,
                layer_name=lambda i: f"L{i}") -> tuple[int, int]:
    """Layer and head boxes beside a head map, starting at `start` (the clicked or the strongest head): the
    keyboard's way to what a click on the map opens. A click moves them: the caller sets their keys first. A new
    `start` (a new result: another pair, text or model) moves them to it; while it stays, they keep the visitor's
    pick (or a link's, on their first run)."""
    before, st.session_state[f"{key}_from"] = st.session_state.get(f"{key}_from"), start
    if before is not None and before != start:  # set, not dropped: the browser's boxes are told the new values
        st.session_state[f"{key}_layer"] = min(start[0], n_layers - 1)
        st.session_state[f"{key}_head"] = min(start[1], n_heads - 1)
    c1, c2 = st.columns(2)
    layer = c1.selectbox("Layer to open", range(n_layers), index=min(start[0], n_layers - 1), key=f"{key}_layer",
                         format_func=layer_name)
    head = c2.selectbox("Head to open", range(n_heads), index=min(start[1], n_heads - 1), key=f"{key}_head",
                        format_func=lambda i: f"H{i}")
    return int(layer), int(head)

