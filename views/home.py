"""Home: what Attention Explorer shows, one line and one small picture per view."""
from pathlib import Path

import streamlit as st

from ui.views import present

# each view's screenshot shrunk to 480 px, made with the screenshots (python -m docs.screenshots), not here: shrinking
# them on the first visit cost about a second of the server's CPU, which held the first paint back
THUMBS = Path(__file__).parent.parent / "docs" / "screenshots" / "thumbs"


st.title("Attention Explorer")
st.markdown(
    "Type a sentence in the sidebar, pick a model and a device, and see what attention does inside it. "
    "Every number comes from the model's own computation. Nothing is downloaded, unless you give a hub id "
    "(hf:owner/name) that is not in the local cache; a hosted server never downloads."
)
for view in present()[1:]:
    pic, words = st.columns([1, 3], vertical_alignment="center")
    thumb = THUMBS / f"{view.stem}.jpg"
    if thumb.exists():
        pic.image(str(thumb), width="stretch", alt=f"Screenshot of the {view.title} view")
    words.page_link(view.path, label=f"**{view.title}**")
    words.write(view.line)
