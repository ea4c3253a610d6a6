"""data.images: PNG and JPEG in, uint8 pixels out, one sentence for everything else; scikit-learn's digits."""
import io

import numpy as np
import pytest
from PIL import Image

from data.images import read_image, sample_digits

CAPS = dict(max_bytes=200_000, max_pixels=100_000)


def encode(img: Image.Image, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


def test_grey_png_round_trips_exactly():
    pixels = np.random.default_rng(0).integers(0, 256, (12, 20)).astype(np.uint8)
    out = read_image(encode(Image.fromarray(pixels)), **CAPS)
    assert out.dtype == np.uint8 and np.array_equal(out, pixels)


def test_colour_jpeg_is_rgb_and_close():
    pixels = np.zeros((16, 16, 3), np.uint8)
    pixels[:, :8] = (200, 30, 30)
    out = read_image(encode(Image.fromarray(pixels), "JPEG"), **CAPS)
    assert out.shape == (16, 16, 3) and np.abs(out.astype(int) - pixels).mean() < 8


def test_transparent_drawing_lands_on_white_paper():
    rgba = np.zeros((8, 8, 4), np.uint8)     # transparent everywhere ...
    rgba[2:6, 3:5] = (0, 0, 0, 255)           # ... but an opaque black stroke
    out = read_image(encode(Image.fromarray(rgba, "RGBA")), **CAPS)
    assert out.shape == (8, 8, 3) and (out[0, 0] == 255).all() and (out[3, 3] == 0).all()


@pytest.mark.parametrize("data, match", [
    (b"", "empty"),
    (b"GIF89a" + b"\x00" * 50, "not a PNG or JPEG"),
    (b"hello, this is text", "not a PNG or JPEG"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "could not be read"),
    (b"\xff\xd8\xff" + b"\x13" * 500, "could not be read"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 300_000, "at most 0.2 MB"),
])
def test_bad_files_get_one_sentence(data, match):
    with pytest.raises(ValueError, match=match):
        read_image(data, **CAPS)


def test_a_small_file_of_too_many_pixels_is_refused_before_decoding():
    data = encode(Image.new("L", (1000, 1000)))  # a few kilobytes, a million pixels
    assert len(data) < CAPS["max_bytes"]
    with pytest.raises(ValueError, match="1000×1000 pixels; upload one of at most 100,000 pixels"):
        read_image(data, **CAPS)


def test_truncated_png_is_refused():
    data = encode(Image.fromarray(np.full((40, 40), 128, np.uint8)))
    with pytest.raises(ValueError, match="could not be read"):
        read_image(data[: len(data) // 2], **CAPS)


def test_sample_digits_are_scikit_learns():
    images, labels = sample_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.float32 and labels[:3].tolist() == [0, 1, 2]
    assert images.min() == 0 and images.max() == 16
