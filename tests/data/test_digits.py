import numpy as np
import pytest
from PIL import Image

from data import digits


def test_load_is_the_bundled_8x8_digits():
    images, labels = digits.load()
    assert images.shape == (1797, 8, 8) and images.dtype == np.float32
    assert images.min() == 0 and images.max() == 16
    assert sorted(set(labels.tolist())) == list(range(10))


def test_load_equals_scikit_learns_load_digits_without_importing_it():
    """The file read directly (a server keeps no scikit-learn modules for it) gives load_digits' very numbers."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    code = ("import json, sys; from data import digits, images; digits.load(); images.sample_digits(); "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout) == []
    from sklearn.datasets import load_digits

    reference, (images, labels) = load_digits(), digits.load()
    assert images.dtype == np.float32 and labels.dtype == np.int64
    np.testing.assert_array_equal(images, reference.images.astype(np.float32))
    np.testing.assert_array_equal(labels, reference.target)


def test_split_is_fixed_disjoint_and_complete():
    train, test = digits.split()
    again_train, again_test = digits.split()
    assert len(test) == 450 and len(train) == 1347
    assert np.array_equal(test, again_test) and np.array_equal(train, again_train)
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(1797))


def photo(image: np.ndarray, scale: int = 10, dark_ink: bool = True) -> Image.Image:
    """An 8x8 digit drawn large as an RGB picture, dark ink on white paper (or the reverse)."""
    big = np.kron(image, np.ones((scale, scale))) * 255 / 16
    return Image.fromarray((255 - big if dark_ink else big).astype(np.uint8)).convert("RGB")


def test_a_photo_of_a_digit_that_fills_its_frame_comes_back():
    images, _ = digits.load()
    # a digit whose ink spans the whole height and sits centred across comes back as it was
    full = [i for i, im in enumerate(images) if im[0].any() and im[-1].any() and not im[:, 0].any()
            and not im[:, -1].any() and (im > 0).any(0).nonzero()[0].tolist() in ([1, 2, 3, 4, 5, 6], [2, 3, 4, 5])]
    image = images[full[0]]
    read = digits.to_digit_image(photo(image))
    assert read.shape == (8, 8) and read.dtype == np.float32 and read.max() == pytest.approx(16)
    assert np.array_equal(read, np.round(read)) and np.abs(read - image * 16 / image.max()).max() <= 1


def test_ink_colour_and_input_kind_do_not_matter():
    image = digits.load()[0][5]
    dark = digits.to_digit_image(photo(image))
    assert np.allclose(digits.to_digit_image(photo(image, dark_ink=False)), dark, atol=1)  # 8-bit rounding
    assert np.allclose(digits.to_digit_image(np.asarray(photo(image))), dark, atol=1e-6)      # (H, W, 3) array
    assert np.allclose(digits.to_digit_image(photo(image).convert("L")), dark, atol=1e-6)     # grayscale


def test_a_blank_image_is_refused():
    with pytest.raises(ValueError, match="blank"):
        digits.to_digit_image(Image.new("RGB", (40, 40), "white"))
    with pytest.raises(ValueError, match="no pixels"):
        digits.to_digit_image(np.zeros((0, 5)))
