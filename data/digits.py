"""scikit-learn's bundled 8x8 handwritten digits, the fixed held-out split, and a user's image made to match.

`load()` reads the 1,797 digits that ship inside scikit-learn (`sklearn.datasets.load_digits`, no
download): 8x8 images whose pixels count the inked cells of a 4x4 block of a 32x32 bitmap, so 0 is
paper, 16 is ink. `split()` holds out 450 of them, chosen by a fixed seed. `to_digit_image()` turns
a photo or drawing (any size, RGB or grayscale, 0-255, dark ink on light paper or the reverse) into
the same form: grayscale, ink made bright, cropped to the ink and centred in a square, shrunk to
8x8 by averaging, scaled to whole numbers 0-16 (the processor's resize step takes whole-numbered
floats as 8-bit values and refuses fractions above 1). It does not normalise for a model: the
model's image processor does.
"""
from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np

from limits.errors import UserError

SIZE, INK = 8, 16.0  # side in pixels; the value of a fully inked pixel
TEST_N, SEED = 450, 0


def load() -> tuple[np.ndarray, np.ndarray]:
    """(images float32 (1797, 8, 8) in 0..16, labels int64 (1797,)): the file scikit-learn ships, read as its
    load_digits reads it (np.loadtxt of the gzipped CSV, the label in the last column), without importing
    scikit-learn: its modules would stay in a server's memory (about 35 MB) for one file. Needs it installed."""
    spec = importlib.util.find_spec("sklearn")  # finds the package's folder without running its code
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("The digits ship with scikit-learn: install it (see the README's setup).")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = np.loadtxt(f, delimiter=",")                                                    # (1797, 64 + 1)
    return data[:, :-1].reshape(-1, SIZE, SIZE).astype(np.float32), data[:, -1].astype(np.int64)


def split(n: int = 1797, test_n: int = TEST_N, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test) of a fixed random split: the same for the same (n, test_n, seed)."""
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[test_n:]), np.sort(order[:test_n])


def to_digit_image(image) -> np.ndarray:
    """A PIL image or an array (H, W) / (H, W, C) of 0-255 values -> float32 (8, 8) of whole numbers 0..16, ink bright.

    Raises ValueError when the image is blank (no ink to find).
    """
    from PIL import Image

    pixels = np.asarray(image.convert("L") if isinstance(image, Image.Image) else image, dtype=np.float32)
    if pixels.ndim == 3:
        pixels = pixels[..., :3].mean(axis=-1) if pixels.shape[-1] >= 3 else pixels[..., 0]
    if pixels.ndim != 2 or min(pixels.shape) < 1:
        raise UserError("The image has no pixels to read: upload a PNG or JPEG of one digit.")
    border = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    paper = float(np.median(border))  # what the border mostly shows
    ink = np.clip(paper - pixels if paper > 127 else pixels - paper, 0, None)
    rows, cols = np.nonzero(ink > 0.25 * ink.max()) if ink.max() > 0 else ((), ())
    if len(rows) == 0:
        raise UserError("The image looks blank: upload a PNG or JPEG with one dark digit on light paper.")
    ink = ink[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    side = max(ink.shape)  # the digits fill their 8x8 frame from top to bottom, centred across
    square = np.zeros((side, side), dtype=np.float32)
    top, left = (side - ink.shape[0]) // 2, (side - ink.shape[1]) // 2
    square[top:top + ink.shape[0], left:left + ink.shape[1]] = ink
    small = Image.fromarray(square).resize((SIZE, SIZE), Image.Resampling.BOX)
    small = np.asarray(small, dtype=np.float32)
    return np.round(small / max(small.max(), 1e-6) * INK).astype(np.float32)  # whole counts, as the digits hold
