"""Colour is never the only cue (WCAG 1.4.1): the palette stays apart for a deuteranope, lines that a view compares
differ in dash too, and every diverging scale and signed bar uses one sign convention."""
import itertools
from pathlib import Path

import numpy as np
import plotly.colors

from viz import kv_cache, sinks
from viz.common import DIVERGING, LOWERS, PALETTE, RAISES
from viz.inside_head import LOWERS as HEAD_LOWERS

# Machado, Oliveira & Fernandes (2009), deuteranopia at severity 1.0, on linear RGB
DEUTERANOPIA = np.array([[0.367322, 0.860646, -0.227968],
                         [0.280085, 0.672501, 0.047413],
                         [-0.011820, 0.042940, 0.968881]])


def _linear(hex_colour: str) -> np.ndarray:
    c = np.array([int(hex_colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)])
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(lin: np.ndarray) -> np.ndarray:
    """CIE L*a*b* (D65) of linear RGB."""
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _seen_by_deuteranope(hex_colour: str) -> np.ndarray:
    return _lab(np.clip(DEUTERANOPIA @ _linear(hex_colour), 0, 1))


def test_the_palettes_first_five_stay_apart_for_a_deuteranope():
    gaps = [np.linalg.norm(_seen_by_deuteranope(a) - _seen_by_deuteranope(b))
            for a, b in itertools.combinations(PALETTE[:5], 2)]
    assert min(gaps) > 10  # ΔE*ab; the red and green the views used were 4.6 apart
    assert np.linalg.norm(_seen_by_deuteranope("#d62728") - _seen_by_deuteranope("#2ca02c")) < 10  # why it matters


def test_compared_lines_differ_in_dash_as_well_as_colour():
    runs = {"window": np.ones(40), "window_sinks": np.ones(40), "full": np.ones(40)}
    fig = sinks.nll(runs, window=8, sinks=4, context=16, smooth=4)
    styles = [(t.line.color, t.line.dash) for t in fig.data]
    assert len({dash for _, dash in styles}) == len(styles) == 3
    timing = kv_cache.latency({"cached": [0.1, 0.2], "uncached": [0.2, 0.4]})
    assert len({t.line.dash for t in timing.data}) == 2


def test_one_sign_convention():
    low, high = (plotly.colors.get_colorscale(DIVERGING)[i][1] for i in (0, -1))
    red_low = plotly.colors.unlabel_rgb(low) if low.startswith("rgb") else plotly.colors.hex_to_rgb(low)
    blue_high = plotly.colors.unlabel_rgb(high) if high.startswith("rgb") else plotly.colors.hex_to_rgb(high)
    assert red_low[0] > red_low[2] and blue_high[2] > blue_high[0]  # negative red, positive blue
    assert _linear(RAISES)[2] > _linear(RAISES)[0] and _linear(LOWERS)[0] > _linear(LOWERS)[2] and HEAD_LOWERS == LOWERS
    viz = Path(__file__).resolve().parents[2] / "viz"
    flipped = [p.name for p in viz.glob("*.py") if "RdBu_r" in p.read_text() or '"crimson"' in p.read_text()]
    assert not flipped
