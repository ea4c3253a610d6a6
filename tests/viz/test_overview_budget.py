"""The heads overview past its cell budget: a slice of layers that fits, labelled with the model's own layer numbers,
whose clicked cells name those layers."""
import json

import numpy as np

from viz.heads import CELLS, MIN_TILE, clicked_head, layers_that_fit, overview


def test_layers_that_fit_the_budget():
    assert layers_that_fit(6, 12) == 6 and layers_that_fit(32, 32) == 32       # up to 4,608 heads: all layers
    assert layers_that_fit(80, 64) == 72 == CELLS // (64 * MIN_TILE ** 2)
    assert layers_that_fit(3, 10 ** 6) == 1                                     # never nothing


def test_a_slice_of_layers_keeps_the_models_layer_numbers():
    rng = np.random.default_rng(0)
    w = rng.random((3, 4, 5, 5)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    toks = list("abcde")
    fig = json.loads(overview(w, toks, toks, first_layer=40).to_json())
    assert fig["layout"]["yaxis"]["ticktext"] == ["L40", "L41", "L42"]
    y = fig["data"][0]["y"]
    assert y[0] == "L40 · a (0)" and clicked_head({"x": "H3 · e (4)", "y": y[-2]}) == (42, 3)
    whole = json.loads(overview(w, toks, toks).to_json())
    assert whole["data"][0]["z"] == fig["data"][0]["z"]                          # same cells, other labels
