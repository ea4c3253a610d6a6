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
