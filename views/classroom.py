"""Class: students join with a code and a nickname and answer the lesson's questions; the teacher starts a class and,
with its secret key, sees how the class did, live: a chart per step, the share right, the common wrong answers, the
explanations, a CSV, and delete."""
import streamlit as st

from classroom.store import CODE_LENGTH, KEEP_DAYS, NICKNAME_CHARS
from limits.errors import UserError
from ui import show
from ui.classroom import class_mode, lesson, speaker
from ui.classroom.lesson import LESSON
from viz import classroom as V

st.title("Class")
show.explain(
    "The lesson asks one question per step; here it becomes a class. Each student's first answer to a step is "
    "stored and checked against the answer computed from the model on screen, the same computation as the "
    "teacher notes. Nothing personal is asked: a nickname is enough.",
    r"\text{share right}_s = \frac{\#\{\text{first answers to step } s \text{ that are right}\}}"
    r"{\#\{\text{first answers to step } s\}}",
    "store.answer(code, student='ana', step=2, answer='L0 H2')  # -> Feedback(correct=True, why=..., counted=True)",
)
join, teach = st.tabs(["🙋 Join (students)", "🧑‍🏫 Teach (teacher)"])

with join:
    who = class_mode.joined()
    if who:
        st.success(f"You are in class **{who[0]}** as **{class_mode.plain(who[1])}**. Each lesson step shows its "
                   "question with a box for your answer; your first answer to a step is the one the class counts.")
        c = st.columns([1, 1, 3])
        c[0].button("Start the lesson", key="class_go", type="primary", on_click=lesson.go, args=(1,))
        if c[1].button("Leave the class", key="class_leave"):
            del st.session_state["class_joined"]
            st.rerun()
    else:
        with st.form("class_join_form", border=False, enter_to_submit=True):
            code = st.text_input(f"Class code ({CODE_LENGTH} characters, from your teacher)", key="class_code",
                                 max_chars=CODE_LENGTH)
            name = st.text_input("Nickname (no real name needed)", key="class_name", max_chars=NICKNAME_CHARS)
            go = st.form_submit_button("Join", type="primary")
        if go:
            try:
                st.session_state["class_joined"] = (code.strip().upper(), class_mode.store().join(code, name))
                st.rerun()
            except UserError as err:
                st.error(str(err))

with teach:
    mine = st.session_state.get("class_teacher")
    if not mine:
        c = st.columns(2)
        if c[0].button("Start a class", key="class_start", type="primary"):
            started = class_mode.store().start("attention")
            st.session_state["class_teacher"] = (started.code, started.teacher_key)
            st.session_state["class_key_new"] = True
            st.rerun()
        with c[1].form("class_open_form", border=False):
            code = st.text_input("Class code", key="class_open_code", max_chars=CODE_LENGTH)
            key = st.text_input("Teacher key", key="class_open_key", type="password")
            if st.form_submit_button("Open my class") and class_mode.results(code, key) is not None:
                st.session_state["class_teacher"] = (code.strip().upper(), key.strip())
                st.rerun()
        st.stop()
    code, key = mine
    if st.toggle("Speaker view (for a second window beside the projector)", key="class_speaker"):
        speaker.speaker(code, key)
        st.stop()
    st.markdown(f"## Class code for students: `{code}`")
    st.caption(f"Students open the Class page, type the code and a nickname. Answers are kept {KEEP_DAYS} days "
               "unless you keep the class.")
    if st.session_state.pop("class_key_new", False):
        st.warning("Your teacher key, shown once: copy it to open this class's results from another window. "
                   "Never share it with students.")
        st.code(key, language=None, wrap_lines=True)

    @st.fragment(run_every=5)
    def live() -> None:
        rows = class_mode.results(code, key)
        if rows is None:
            return
        joined = class_mode.store().students(code, key)
        st.caption(f"{len(joined)} students, {len(rows)} first answers · refreshed every 5 s" +
                   (" · joined: " + ", ".join(class_mode.plain(name) for name in joined) if joined else ""))
        for n, step in enumerate(LESSON, 1):
            got = rows[rows["step"] == n]
            if got.empty:
                continue
            counts = class_mode.counts(rows, n)
            with st.container(border=True, key=f"class_step_{n}"):
                st.markdown(f"**Step {n} · {step.title}** · {got['correct'].mean():.0%} right")
                show.plot(V.answers_bar(counts, n, step.title), f"class-step-{n}", key=f"class_chart_{n}")
                st.caption(V.sentence(counts, n))
                wrong = [f"{class_mode.plain(a)} ({k})" for a, k, right in sorted(counts, key=lambda c: -c[1])
                         if not right][:3]
                if wrong:
                    st.markdown("Common wrong answers: " + ", ".join(wrong))
                said = got[got["explain"] != ""][["student", "explain"]]
                if not said.empty:
                    st.dataframe(said, hide_index=True, width="stretch")
        st.download_button("Download the answers (CSV)", rows.to_csv(index=False).encode(), f"class-{code}.csv",
                            "text/csv", key="class_csv")

    live()
    c = st.columns(4)
    c[3].button("Present the lesson", key="class_present", on_click=lesson.go, args=(1,),
                help="Opens step 1 in this window; a speaker view opened in another window follows each step.")
    c[0].toggle(f"Keep past {KEEP_DAYS} days", key="class_keep",
                on_change=lambda: class_mode.store().keep(code, key, st.session_state["class_keep"]))
    if c[1].button("Close this class here", key="class_close"):
        del st.session_state["class_teacher"]
        st.rerun()
    with c[2].popover("Delete the class"):
        st.write("Deletes the class and every answer, for good.")
        if st.button("Delete", key="class_delete", type="primary"):
            class_mode.store().delete(code, key)
            del st.session_state["class_teacher"]
            st.rerun()
