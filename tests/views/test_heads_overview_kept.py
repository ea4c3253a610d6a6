"""The Heads view pools its overview once per server (ui.runtime.cache's results store): a rerun, a click or a fresh
session draws the kept tiles, read-only and shared, instead of reading the whole (L, H, T, T) attention again
(1 GiB for 1,024 heads at 512 tokens, seconds of a fresh link's paint). Decided by counting the reads of every
weight (calls of viz.heads.pool and the weights they read), never by time; real MiniLM, and the figure is
checked against the overview drawn straight from the trace."""
import base64
import json

import numpy as np

import viz.heads
from tests.views.view_at import open_view
from ui.runtime import cache


def open_overview(text: str):
    """A new session on the Heads view with MiniLM and `text`, and its overview's colour grid as an array."""
    at = open_view("heads", text=text)
    z = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["z"]
    if isinstance(z, dict):  # plotly's typed array
        z = np.frombuffer(base64.b64decode(z["bdata"]), z["dtype"]).reshape([int(n) for n in z["shape"].split(",")])
    return at, np.asarray(z)


def test_overview_tiles_are_pooled_once_and_shared_read_only(monkeypatch):
    reads = []
    pool = viz.heads.pool

    def counted(weights, size=viz.heads.TILE):
        reads.append(weights.size)
        return pool(weights, size)

    monkeypatch.setattr(viz.heads, "pool", counted)
    text = " ".join(["the otter kept its pebble under the willow by the weir"] * 8)  # 98 tokens: pooled in pairs
    at, z = open_overview(text)
    trace = cache.trace("bert", "cpu", "float32", text, None, 0)
    t = len(trace.tokens)
    assert sum(reads) == trace.weights.size and trace.weights.shape == (6, 12, t, t) and t > 64  # the first run
    first = len(reads)                                                              # (a layer at a time)
    straight = viz.heads.overview(trace.weights, trace.tokens, trace.key_tokens)     # not through the view
    assert np.array_equal(z, np.asarray(straight.data[0].z)) and reads.pop() == trace.weights.size

    at.radio(key="heads_scale").set_value("shared").run()                          # a rerun
    at.selectbox(key="heads_head").set_value(7).run()                              # another head up close
    again, z_again = open_overview(text)                                            # a fresh link: a new session
    assert not at.exception and len(reads) == first                                 # none of them reads again
    assert np.array_equal(z_again, z)

    tiles = (6, 12, (t + 1) // 2, (t + 1) // 2)
    kept = [v for v, _, _ in cache.STORES["results"]._values.values()
            if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], np.ndarray) and v[0].shape == tiles]
    assert len(kept) == 1 and not kept[0][0].flags.writeable                        # shared: nobody can change it
    assert kept[0][1] == 2 and kept[0][0].nbytes < trace.weights.nbytes / 3

    again.toggle(key="heads_hide").set_value(True).run()                           # other tiles: read once, kept
    again.toggle(key="heads_hide").set_value(False).run()
    assert not again.exception and sum(reads[first:]) == 6 * 12 * (t - 2) ** 2    # [CLS], [SEP] hidden, once


def test_hiding_special_tokens_renormalises_what_is_drawn_not_the_whole_attention_per_run(monkeypatch):
    import analysis.special

    sizes = []
    hide = analysis.special.hide_special

    def counted(weights, tokens, key_tokens, *args):
        sizes.append(weights.size)
        return hide(weights, tokens, key_tokens, *args)

    monkeypatch.setattr(analysis.special, "hide_special", counted)
    text = " ".join(["a heron stood still in the reeds and waited for the fish"] * 8)
    at, _ = open_overview(text)
    trace = cache.trace("bert", "cpu", "float32", text, None, 0)
    t = len(trace.tokens)
    at.toggle(key="heads_hide").set_value(True).run()
    at.selectbox(key="heads_head").set_value(5).run()
    at.radio(key="heads_scale").set_value("shared").run()
    head = json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]
    layer = trace.weights[0].size
    assert not at.exception and sizes.count(layer) == 6                    # the kept tiles, once, layer by layer
    assert set(sizes) == {layer, t * t} and "[CLS]" not in head["x"]       # else one head at a time
    expected = hide(trace.weights[0, 5], trace.tokens, trace.key_tokens)[0]
    z = head["z"]
    z = np.frombuffer(base64.b64decode(z["bdata"]), z["dtype"]).reshape(expected.shape) if isinstance(z, dict) else z
    assert np.allclose(np.asarray(z), expected, atol=1e-4)
