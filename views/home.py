"""Home: what Attention Explorer shows, one link and one line per view.

No pictures: 24 thumbnails (each a row of columns, an image and a link) held the first paint back by about 0.2 s
on a 2-core machine, and every session kept its own copies in Streamlit's media store. The README shows each
view's screenshot.
"""
import streamlit as st

from ui.views import present

st.title("Attention Explorer")
st.markdown(
    "Type a sentence in the sidebar, pick a model and a device, and see what attention does inside it. "
    "Every number comes from the model's own computation. Nothing is downloaded, unless you give a hub id "
    "(hf:owner/name) that is not in the local cache; a hosted server never downloads."
)
for view in present()[1:]:
    st.page_link(view.path, label=f"**{view.title}**: {view.line}", icon=view.icon)
