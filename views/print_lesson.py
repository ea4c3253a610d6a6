"""Printable lesson: one page to print or save as PDF: each step's question with its figure as a static image (or its
table), then a teacher sheet with the answers, where to point, the computed pick and the minutes."""
import streamlit as st

from classroom import answers
from limits import memory
from ui.classroom import lesson_print
from ui.classroom.lesson import LESSON, SLACK, TITLES
from ui.runtime import streamlit_private
from viz.common import readable_text
from viz.describe import describe

st.html(streamlit_private.PRINT_STYLE)
st.title("The lesson, to print")
st.markdown("Print this page or save it as PDF from the browser (Ctrl+P or ⌘P): the sidebar stays off the paper and "
            "each step keeps to one page. The figures are the ones each view draws on the step's model and text, "
            "here as still images; the teacher sheet starts on a new page.")
progress = st.progress(0.0, text="Drawing the steps' figures…")
for n, step in enumerate(LESSON, 1):
    progress.progress(n / len(LESSON), text=f"Drawing step {n} of {len(LESSON)}…")
    with st.container(key=f"print_step_{n}"):
        st.header(f"{n}. {step.title} ({TITLES[step.view]})")
        st.markdown(f"❓ {step.question}")
        st.markdown(f"✍️ {answers.question('attention', n).prompt}")
        fig = lesson_print.figure(n)
        if fig is not None:
            st.plotly_chart(readable_text(fig), config={"staticPlot": True, "displayModeBar": False},
                            width="content", key=f"print_fig_{n}", alt=describe(fig))
        else:
            st.table(lesson_print.table(n))
progress.empty()
memory.release_freed()  # the steps' work, freed (the BPE trained for step 4): glibc kept ~8 MB of it

with st.container(key="print_sheet"):
    st.header("Teacher sheet")
    minutes = sum(s.notes.minutes for s in LESSON)
    st.markdown(f"{minutes} minutes in all for {len(LESSON)} steps, leaving {SLACK} of a 50-minute class free.")
    for n, step in enumerate(LESSON, 1):
        q = answers.question("attention", n)
        st.markdown(f"**{n}. {step.title}** · {step.notes.minutes} min  \n"
                    f"**Answer.** {step.notes.answer}  \n"
                    + (f"**Where to point (marked in the view):** {step.notes.where}.  \n" if step.notes.where else "")
                    + f"**The pick:** {q.prompt} → **{', '.join(sorted(q.correct))}**. {q.why}")
