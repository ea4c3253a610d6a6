"""The speaker view: a second window beside the projector that follows the step the teacher presents (recorded in the
class's store by ui.classroom.lesson.go) and shows its notes, the computed answer and the class's answers to it, live.
Computes nothing new: the notes are ui.classroom.lesson's, the answer classroom.answers', the counts the store's."""
from __future__ import annotations

import streamlit as st

from classroom import answers
from limits.errors import UserError
from ui import show
from ui.classroom import class_mode
from ui.classroom.lesson import LESSON, TITLES
from viz import classroom as V


@st.fragment(run_every=2)
def speaker(code: str, key: str) -> None:
    """The presented step's notes and results, refreshed every 2 s."""
    try:
        n = class_mode.store().presented(code, key)
    except (UserError, PermissionError) as err:
        st.error(str(err))
        return
    if not 1 <= n <= len(LESSON):
        st.info("Waiting for the lesson: in the window you present from, open this class (Teach), then "
                "Present the lesson or pick a step under Lesson in the sidebar. This view follows it.")
        return
    step, q = LESSON[n - 1], answers.question("attention", n)
    done = sum(s.notes.minutes for s in LESSON[:n])
    st.header(f"Step {n} of {len(LESSON)} · {step.title} ({TITLES[step.view]})")
    st.markdown(f"❓ {step.question}")
    st.markdown(f"**Answer.** {step.notes.answer}")
    if step.notes.where:
        st.markdown(f"**Where to point:** {step.notes.where}.")
    st.markdown(f"**The students' pick:** {q.prompt} → **{class_mode.plain(', '.join(sorted(q.correct)))}**. {q.why}")
    st.caption(f"{step.notes.minutes} minutes for this step; {done} of the class's minutes by its end.")
    rows = class_mode.store().results(code, key)
    counts = class_mode.counts(rows, n)
    if counts:
        show.plot(V.answers_bar(counts, n, step.title), f"class-speaker-{n}", key="class_speaker_chart")
    st.caption(V.sentence(counts, n))
