"""analysis.patches: token index <-> patch, attention rows as patch grids."""
import numpy as np
import pytest

from analysis.patches import special_share, to_grid


def patch_index(row: int, col: int, cols: int, n_special: int) -> int:
    """Token index of patch (row, col), written out apart from to_grid's reshape: the reference it is checked
    against (the app only reshapes)."""
    return n_special + row * cols + col


def test_patch_index_is_row_major_after_the_special_tokens():
    assert patch_index(0, 0, cols=4, n_special=1) == 1
    assert patch_index(1, 2, cols=4, n_special=1) == 7
    assert patch_index(3, 3, cols=4, n_special=2) == 17


def test_to_grid_drops_the_specials_and_keeps_row_major_order():
    rows = np.arange(2 * 3 * (2 + 6), dtype=np.float32).reshape(2, 3, 8)  # [L, H, T]: 2 specials, 2x3 patches
    grid = to_grid(rows, (2, 3), n_special=2)
    assert grid.shape == (2, 3, 2, 3)
    for r in range(2):
        for c in range(3):
            assert (grid[..., r, c] == rows[..., patch_index(r, c, 3, 2)]).all()
    assert np.allclose(special_share(rows, 2), rows[..., 0] + rows[..., 1])
    with pytest.raises(ValueError, match="do not make 1 special tokens and 2×3 patches"):
        to_grid(rows, (2, 3), n_special=1)
