"""Home: what Attention Explorer shows, one line and one small picture per view."""
import io
from pathlib import Path

import streamlit as st

from ui.runtime import cache
from ui.views import present

SHOTS = Path(__file__).parent.parent / "docs" / "screenshots"


@cache.memo("results")
def thumbnail(path: str, mtime: float) -> bytes:
    """A screenshot shrunk to 480 px wide as JPEG, once per file version (not per visit: ~0.1 s each)."""
    from PIL import Image

    with Image.open(path) as im:
        im = im.convert("RGB")
        im.thumbnail((480, 480))
        out = io.BytesIO()
        im.save(out, "JPEG", quality=85)
    return out.getvalue()


st.title("Attention Explorer")
st.markdown(
    "Type a sentence in the sidebar, pick a model and a device, and see what attention does inside it. "
    "Every number comes from the model's own computation. Nothing is downloaded, unless you give a hub id "
    "(hf:owner/name) that is not in the local cache; a hosted server never downloads."
)
for view in present()[1:]:
    pic, words = st.columns([1, 3], vertical_alignment="center")
    shot = SHOTS / f"{view.stem}.png"
    if shot.exists():
        pic.image(thumbnail(str(shot), shot.stat().st_mtime), width="stretch",
                  alt=f"Screenshot of the {view.title} view")
    words.page_link(view.path, label=f"**{view.title}**")
    words.write(view.line)
