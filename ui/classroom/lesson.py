"""A class, prepared: the guided lesson walked in the page (an ordered path through the views with one question per
step, `?lesson=3` reopens step 3): the sidebar's picker, a link's arrival, the banner above the view and the marks on
the figure a step's question points to. The examples and the steps themselves are data in ui/classroom/lesson_steps.py
(re-exported here); the banner is drawn by app.py above the view.
"""
from __future__ import annotations

import streamlit as st

from ui.classroom import class_mode, links, presenter
from ui.classroom.lesson_steps import (  # noqa: F401  (re-exported: views and tests read the lesson from here)
    ANIMAL,
    BRACKET,
    DATE,
    EXAMPLES,
    HEAD_KEYS,
    LESSON,
    NAME,
    PATH,
    RARE,
    RIVER,
    SHORE,
    SLACK,
    WIDE,
    Mark,
)
from ui.views import VIEWS

TITLES = {v.stem: v.title for v in VIEWS}


def step_number() -> int | None:
    """The lesson step the sidebar holds (1-based, as the class counts), or None when no lesson is on."""
    n = st.session_state.get("lesson")
    return n if isinstance(n, int) and 1 <= n <= len(LESSON) else None


def go(n: int | None) -> None:
    """Button callback: step n of the lesson (None ends it), opening its view with its settings and its model and
    text in the sidebar (the defaults where the step names none, so Previous and Next restore each step's own)."""
    st.session_state["lesson"] = n
    class_mode.presenting(n or 0)  # a teacher's window with a class open: the speaker view follows
    if n is not None:
        step = LESSON[n - 1]
        wanted = step.query()
        links.request(step.view, step.params, {"model": wanted["model"], "text": wanted["text"], "text_b": ""})


def picker() -> None:
    """Sidebar control: the lesson's steps 1..8, none picked when no lesson is on (bound to ?lesson=)."""
    st.pills("Lesson", list(range(1, len(LESSON) + 1)), key="lesson", bind="query-params",
             on_change=lambda: go(st.session_state.get("lesson")),
             help="A path through the views, one question per step for the class: " +
             "; ".join(f"{i}. {s.title}" for i, s in enumerate(LESSON, 1)) + ".")


def arrive(link: dict[str, str], running: str) -> None:
    """On a session's first run, before any widget: a link with ?lesson=n switches to step n's view with the
    step's sidebar (model, text) and settings, as picking step n does, carrying the whole link (whose own values
    win over the step's). Nothing happens where the link already holds all of them on the step's view."""
    n = link.get("lesson", "")
    if not n.isdigit() or not 1 <= int(n) <= len(LESSON):
        return
    step = LESSON[int(n) - 1]
    wanted = step.query()
    if step.view != (running or "home") or not set(wanted) <= set(link):
        st.switch_page(links.path(step.view), query_params={**wanted, **link})


def is_target(name: str) -> bool:
    """In presenter mode, whether `name` (show.plot's) is the figure the lesson step's question points to: the page
    scrolls it into view below the question (ui.show.plot)."""
    n = step_number()
    return n is not None and presenter.on() and any(m.figure == name for m in LESSON[n - 1].notes.marks[:1])


def mark(fig, name: str):
    """The figure with the lesson step's marks drawn on it, where it is the figure the step's question points to
    (`name`: show.plot's); not in presenter mode, where the notes are hidden too."""
    n = step_number()
    if n is None or presenter.on():
        return fig
    for m in LESSON[n - 1].notes.marks:
        if m.figure == name:
            for shape in _shapes(m, fig):
                fig.add_shape(**shape, line=dict(color="#e8114a", width=3), fillcolor="rgba(0,0,0,0)")
    return fig


def _shapes(m: Mark, fig) -> list[dict]:
    """Plotly shapes in the figure's data coordinates (category axes count positions from 0) that frame the marked
    cells without covering them: a box half a cell outside them, or for the diagonal two lines through the corners
    of its cells (y = x ± 1), so the values the question asks about stay visible."""
    ref = dict(xref=f"x{m.axes}", yref=f"y{m.axes}")
    if m.diagonal:
        trace = next(t for t in fig.data if (t.xaxis or "x") == ref["xref"])
        n = len(trace.z)
        return [dict(type="line", x0=-0.5, y0=0.5, x1=n - 1.5, y1=n - 0.5, **ref),
                dict(type="line", x0=0.5, y0=-0.5, x1=n - 0.5, y1=n - 1.5, **ref)]
    rows, cols = m.rows, m.cols
    if m.head is not None:  # the overview's tiles: categories 'L2 · tok', 'H7 · tok'
        x, y = list(fig.data[0].x), list(fig.data[0].y)
        xs = [i for i, v in enumerate(x) if str(v).startswith(f"H{m.head[1]} · ")]
        ys = [i for i, v in enumerate(y) if str(v).startswith(f"L{m.head[0]} · ")]
        rows, cols = (ys[0], ys[-1]), (xs[0], xs[-1])
    return [dict(type="rect", x0=cols[0] - 1, x1=cols[1] + 1, y0=rows[0] - 1, y1=rows[1] + 1, **ref)]


def banner(running: str) -> None:
    """Above the view: the step, its question, previous / next, and a way back to the step's view."""
    n = step_number()
    if n is None:
        return
    step = LESSON[n - 1]
    with st.container(border=True, key="lesson_banner"):
        line = f"**Lesson · step {n} of {len(LESSON)} · {step.title}** ({TITLES[step.view]})  \n❓ {step.question}"
        if presenter.on():  # one row: the question beside its buttons, so the figure below fits the screen
            c = st.columns([7, 1, 1], vertical_alignment="center")
            c[0].markdown(line)
            c[1].button("←", key="lesson_prev", disabled=n == 1, on_click=go, args=(n - 1,), help="Previous step")
            c[2].button("→", key="lesson_next", disabled=n == len(LESSON), on_click=go, args=(n + 1,),
                        help="Next step")
            return
        st.markdown(line)
        if not class_mode.joined():  # the teacher's: not the projector's, not a student's
            with st.expander(f"Teacher notes · {step.notes.minutes} min", expanded=False):
                st.markdown(f"**Answer.** {step.notes.answer}")
                if step.notes.where:
                    st.markdown(f"**Where to point:** {step.notes.where}"
                                + (" (marked in red in the figure)." if step.notes.marks else "."))
                done = sum(s.notes.minutes for s in LESSON[:n])
                st.caption(f"{step.notes.minutes} minutes for this step; {done} of a 50-minute class by its end.")
        class_mode.answer_box(n)
        c = st.columns([1, 1, 1, 2])
        c[0].button("← Previous", key="lesson_prev", disabled=n == 1, on_click=go, args=(n - 1,))
        c[1].button("Next →", key="lesson_next", disabled=n == len(LESSON), on_click=go, args=(n + 1,))
        c[2].button("End lesson", key="lesson_end", on_click=go, args=(None,))
        if step.view != (running or "home"):
            c[3].button(f"Back to {TITLES[step.view]}", key="lesson_here", on_click=go, args=(n,))
