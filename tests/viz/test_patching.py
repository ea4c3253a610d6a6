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
