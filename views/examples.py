"""Examples: prepared links, each opening a view on a model, a text and a head, with what to see there."""
import streamlit as st

from ui.classroom import links
from ui.classroom.lesson import EXAMPLES, LESSON, TITLES

st.title("Examples for a class")
st.markdown("Each link opens a view with its model, text and head already chosen; the sentences under it say what "
            "to look at, and each one is checked against the model by the test suite. A link opens in this "
            "session and sets the sidebar's model and text as it would opened fresh (your own sentence is replaced); "
            "right-click one to copy it for a slide or a message.")
for i, ex in enumerate(EXAMPLES):
    with st.container(border=True, key=f"example_{ex.key}"):
        st.markdown(f"**{i + 1}. {ex.title}** · {TITLES[ex.view]}")
        st.markdown(ex.what)
        st.page_link(links.path(ex.view), label=f"Open in {TITLES[ex.view]}", icon="🔗", query_params=ex.query())

st.header("The guided lesson")
st.markdown("The same ideas in the order a class meets them, one question per step. Pick a step under **Lesson** "
            "in the sidebar, or open `?lesson=1`; Previous and Next walk through the views.")
for i, step in enumerate(LESSON, 1):
    st.markdown(f"{i}. **{step.title}** ({TITLES[step.view]}): {step.question}")
