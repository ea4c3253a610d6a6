"""Compare figures: tokens at numeric positions with escaped labels, the numbers given."""
import numpy as np

from viz.compare import difference_per_head, key_difference, side_by_side

EVIL = "<img src=x onerror=alert(1)>"


def test_side_by_side_keeps_repeated_and_html_tokens_apart():
    fig = side_by_side(np.array([0.5, 0.25, 0.25]), np.array([1.0, 0.0]), ["the", EVIL, "the"], ["a", "b"], "A", "B")
    left, right = fig.data
    assert list(left.x) == [0, 1, 2] and np.allclose(left.y, [0.5, 0.25, 0.25]) and np.allclose(right.y, [1, 0])
    ticks = fig.layout.xaxis.ticktext
    assert len(set(ticks)) == 3 and "<img" not in "".join(ticks) and "&lt;img" in ticks[1]


def test_per_head_and_key_difference_show_their_numbers():
    size = np.arange(6, dtype=float).reshape(2, 3) / 10
    heat = difference_per_head(size, "t").data[0]
    assert np.allclose(heat.z, size) and list(heat.x) == [0, 1, 2]
    bars = key_difference(np.array([0.1, -0.2]), ["x", EVIL], "t").data[0]
    assert np.allclose(bars.y, [0.1, -0.2]) and bars.marker.color[0] != bars.marker.color[1]
