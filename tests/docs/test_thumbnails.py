"""The home page's thumbnails are the screenshots they stand for, shrunk by docs.screenshots.thumbnail: a screenshot
retaken without its thumbnail fails here, and every view with a screenshot has one."""
import io

import numpy as np
from PIL import Image

from docs.screenshots import OUT, THUMBS, thumbnail
from ui.views import present


def _pixels(jpeg: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(jpeg)) as im:
        return np.asarray(im.convert("RGB"), dtype=np.int16)


def _differ(a: bytes, b: bytes) -> float:
    """Mean absolute difference of two JPEGs' pixels (0-255), inf when their sizes differ."""
    x, y = _pixels(a), _pixels(b)
    return float(np.abs(x - y).mean()) if x.shape == y.shape else float("inf")


def test_every_screenshot_has_its_own_thumbnail():
    stems = [v.stem for v in present()[1:] if (OUT / f"{v.stem}.png").exists()]
    assert len(stems) >= 20  # the views the README shows
    made = {stem: thumbnail(OUT / f"{stem}.png") for stem in stems}
    for stem in stems:
        shipped = (THUMBS / f"{stem}.jpg").read_bytes()
        # the same encoder on another CPU may round a few pixels otherwise; another screenshot differs by far more
        assert _differ(shipped, made[stem]) < 0.5, stem
    # the check can tell two views apart
    assert _differ((THUMBS / f"{stems[0]}.jpg").read_bytes(), made[stems[1]]) > 5


def test_the_home_page_shows_every_thumbnail():
    """The home page reads the thumbnails where docs.screenshots writes them: one picture beside each view that has
    one (a path that drifted apart would show none, silently)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file("../../app.py", default_timeout=60).run()
    assert not at.exception
    shown = [e for e in _elements(at.main) if type(e).__name__ == "Image"]
    assert len(shown) == len([v for v in present()[1:] if (THUMBS / f"{v.stem}.jpg").exists()]) >= 20


def _elements(node):
    """Every element under an AppTest block, depth first."""
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _elements(child)
