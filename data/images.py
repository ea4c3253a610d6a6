"""Images a user uploads (PNG or JPEG), read into pixels with caps, and scikit-learn's bundled 8×8 digits.

    read_image(png_bytes, max_bytes=2_000_000, max_pixels=4_000_000) -> uint8 (H, W) or (H, W, 3)
    sample_digits() -> images float32 (1797, 8, 8) in 0..16 (16 = ink), labels int64 (1797,)

read_image checks the size of the file and of the decoded image before decoding (a few kilobytes of
PNG can unpack to gigabytes), keeps grey images grey, puts a transparent drawing on white paper, and
raises ValueError with one sentence for anything else. It does not resize, crop or invert: a model's
own rules for that live with the model (models.hf.vision) or its data.
"""
from __future__ import annotations

import io

import numpy as np

from limits.errors import UserError

SIGNATURES = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG"}


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def read_image(data: bytes, max_bytes: int, max_pixels: int) -> np.ndarray:
    """A PNG or JPEG file's bytes -> uint8 pixels (H, W) for grey images, (H, W, 3) for colour ones."""
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise UserError("The file is empty: upload a PNG or JPEG image.")
    if len(data) > max_bytes:
        raise UserError(f"The file is {_mb(len(data))}; upload an image of at most {_mb(max_bytes)}.")
    if not any(data.startswith(sig) for sig in SIGNATURES):
        raise UserError("This file is not a PNG or JPEG image: save the picture as .png or .jpg and upload it again.")
    try:
        with Image.open(io.BytesIO(data)) as img:
            w, h = img.size
            if w * h > max_pixels:
                raise UserError(f"The image is {w}×{h} pixels; upload one of at most {max_pixels:,} pixels.")
            img.load()
            if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
                rgba = img.convert("RGBA")
                paper = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
                img = Image.alpha_composite(paper, rgba)
            grey = img.mode in ("1", "L", "LA", "I", "I;16", "F")
            return np.asarray(img.convert("L" if grey else "RGB"), dtype=np.uint8)
    except Image.DecompressionBombError as err:
        raise UserError(f"The image holds too many pixels; upload one of at most {max_pixels:,} pixels.") from err
    except (UnidentifiedImageError, OSError, SyntaxError) as err:
        raise UserError("The file could not be read as an image (it may be damaged or cut short): "
                        "upload another PNG or JPEG.") from err


def sample_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 bundled 8×8 digits (no download): images float32 (N, 8, 8) in 0..16, labels (N,)."""
    from data import digits

    return digits.load()  # the same file, read without importing scikit-learn
