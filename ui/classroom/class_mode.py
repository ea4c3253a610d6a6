"""The class on the page: one shared store per server, a student's answer box under the lesson's question, and the
pieces of the teacher's view (views/classroom.py). Session state holds only who this browser is (the class code and
nickname a student joined with, the teacher key typed); every answer lives in the store.

What it does not do: decide what is right (classroom.answers) or keep answers itself (classroom.store).
"""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

import streamlit as st

from classroom import answers
from limits.errors import UserError
from ui.classroom import presenter

if TYPE_CHECKING:  # pandas and the store's SQLAlchemy (about 0.7 s of CPU) load at the class's first use, not before
    import pandas as pd  # every page's first paint (ui.classroom.lesson imports this module)

    from classroom.store import ClassStore


@functools.lru_cache(maxsize=1)
def _store(url: str) -> ClassStore:
    """One store per server (a connection pool, not a cache of results: nothing in it to evict). Classes past
    their 30 days go when a server first opens the store."""
    from classroom.store import ClassStore

    store = ClassStore(url)
    store.purge()
    return store


def store() -> ClassStore:
    """The server's one store (its engine's pool is shared by every session; the store keeps no session's state)."""
    from classroom.store import default_url

    return _store(default_url())


def plain(text: str) -> str:
    """`text` with every Markdown character escaped, so a nickname or an answer shows as the text it is.
        plain("**ana**") -> '\\*\\*ana\\*\\*'"""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!<>|~$])", r"\\\1", text)


def joined() -> tuple[str, str] | None:
    """(class code, nickname) this browser joined with, or None."""
    got = st.session_state.get("class_joined")
    return tuple(got) if isinstance(got, (tuple, list)) and len(got) == 2 else None


def answer_box(n: int) -> None:
    """Under the lesson's question: the step's pick and a short explanation, checked against the model, with the
    reason. Stored for the class when this browser joined one (the first answer counts); otherwise only checked.
    Not in presenter mode: the projector shows the question, the students answer on their own screens. Folded
    away for a visitor not in a class, so the figure the question needs stays near the top of the page."""
    if presenter.on():
        return
    with st.spinner("Computing this step's answer from the model…"):
        q = answers.question("attention", n)  # once per server: the first asker waits for its model
    who = joined()
    with st.expander("✍️ Your answer" + (" for the class" if who else ""), expanded=bool(who)):
        with st.form(key=f"class_answer_{n}", border=False, enter_to_submit=False):
            if len(q.options) <= 6:
                pick = st.radio(q.prompt, q.options, index=None, key=f"class_pick_{n}", horizontal=True)
            else:
                pick = st.selectbox(q.prompt, q.options, index=None, key=f"class_pick_{n}", placeholder="Pick one")
            explain = st.text_area("Why? (optional, a sentence or two)", key=f"class_explain_{n}", max_chars=1000,
                                   height=68)
            sent = st.form_submit_button("Answer" + (f" as {plain(who[1])}" if who else ""))
        if not who:
            st.caption("Not in a class: your answer is checked here and not stored. Join one on the Class page.")
        if sent:
            _answer(n, q, pick, explain, who)


def _answer(n: int, q: answers.Question, pick: str | None, explain: str, who: tuple[str, str] | None) -> None:
    if pick is None:
        st.warning("Pick an answer first.")
        return
    try:
        if who:
            f = store().answer(who[0], who[1], n, pick, explain)
            right, why, counted = f.correct, f.why, f.counted
        else:
            (right, why), counted = q.check(pick), None
    except UserError as err:
        st.error(str(err))
        return
    (st.success if right else st.error)(("Right. " if right else "Not quite. ") + why)
    if counted is False:
        st.caption("You answered this step before: your first answer is the one the class counts.")


def presenting(n: int) -> None:
    """Record that this window presents lesson step n (0: none), when it is a teacher's with a class open."""
    mine = st.session_state.get("class_teacher")
    if mine:
        try:
            store().present(*mine, n)
        except (UserError, PermissionError):  # the class was deleted meanwhile: this window no longer holds one
            del st.session_state["class_teacher"]


def results(code: str, key: str) -> pd.DataFrame | None:
    """The class's first answers, or None after saying why not (a wrong code or key)."""
    try:
        return store().results(code, key)
    except PermissionError as err:
        st.error(f"{err} Students' links never hold it: it is shown once, to the teacher who started the class.")
    except UserError as err:
        st.error(str(err))
    return None


def counts(rows: pd.DataFrame, step: int) -> list[tuple[str, int, bool]]:
    """(answer, students, right?) for one step's first answers."""
    got = rows[rows["step"] == step].groupby(["answer", "correct"]).size()
    return [(answer, int(n), bool(right)) for (answer, right), n in got.items()]
