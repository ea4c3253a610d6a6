"""viz.patching: the residual map's token labels stay upright only while they fit side by side."""
import numpy as np

from viz.patching import positions_figure


def _angle(tokens: list[str]) -> int:
    scores = np.zeros((4, len(tokens)))
    return positions_figure(scores, [f"layer {i}" for i in range(4)], tokens, tokens).layout.xaxis.tickangle


def test_short_tokens_stay_upright_and_long_ones_tilt():
    assert _angle(["<s>", "a", "b", "c"]) == 0  # the escaped '&lt;s&gt;' counts as the three characters it shows
    gpt = ["<s>", "def", "Ġare", "a", "(", "name", "):", "Ġreturn", "Ġname", "Ġ*"]  # the Patching view's default
    assert _angle(gpt) == -45
    assert _angle([f"t{i}" for i in range(20)]) == -60


def test_a_long_text_labels_positions_a_stride_apart_those_that_differ_first():
    """(Issue: every differing token was labelled beside the stride's, so a differing word of one-character tokens
    printed its labels on top of each other and of their neighbours'.)"""
    tokens = [f"t{i}" for i in range(60)]
    corrupt = [*tokens[:33], "x", *tokens[34:]]
    axis = positions_figure(np.zeros((2, 60)), ["L0", "L1"], tokens, corrupt).layout.xaxis
    assert list(axis.tickvals) == [*range(0, 31, 2), 33, *range(36, 60, 2)] and axis.ticktext[16] == "<b>t33</b>"
    assert axis.title.text.endswith("; one in 2 labelled")
    run = [*tokens[:39], "J", "o", "h", "n", *tokens[43:]]  # four adjacent tokens differ
    axis = positions_figure(np.zeros((2, 60)), ["L0", "L1"], tokens, run).layout.xaxis
    assert {39, 41} <= set(axis.tickvals) and min(np.diff(axis.tickvals)) >= 2
    short = positions_figure(np.zeros((2, 40)), ["L0", "L1"], tokens[:40], tokens[:40]).layout.xaxis
    assert list(short.tickvals) == list(range(40)) and short.title.text == "position (tokens that differ in bold)"
