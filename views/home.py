"""Home: what Attention Explorer shows, one line and one small picture per view."""
from pathlib import Path

import streamlit as st

from ui.views import present

SHOTS = Path(__file__).parent.parent / "docs" / "screenshots"

st.title("Attention Explorer")
st.markdown(
    "Type a sentence in the sidebar, pick a model and a device, and see what attention does inside it. "
    "Every number comes from the model's own computation; nothing is downloaded."
)
for view in present()[1:]:
    pic, words = st.columns([1, 3], vertical_alignment="center")
    shot = SHOTS / f"{view.stem}.png"
    if shot.exists():
        pic.image(str(shot), width="stretch")
    words.page_link(view.path, label=f"**{view.title}**")
    words.write(view.line)
