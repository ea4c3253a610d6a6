"""Hosted mode: a default visit of Attribution and Precision runs only the cheap part (counted by calls, never by a
clock); the button runs the rest and shows the numbers the model computes (an independent path, outside the app's
caches); a laptop computes everything without a button."""
import base64
import json

import numpy as np
import pytest

import experiments.attribution_methods as am
import experiments.precision as ep
import limits
import ui.attribution as ua
from bench.load import heavy_requests
from tests.views.view_at import open_view


def _array(v) -> np.ndarray:
    """A figure's array as plotly writes it: a list, or a typed array {"dtype", "bdata", "shape"}."""
    if isinstance(v, dict):
        a = np.frombuffer(base64.b64decode(v["bdata"]), v["dtype"])
        return a.reshape([int(n) for n in str(v.get("shape", len(a))).split(",")])
    return np.asarray(v, float)


def _count(monkeypatch, module, name: str) -> list:
    """Replace module.name with a wrapper that records each call (and still calls it)."""
    calls, real = [], getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.fixture
def hosted(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")


def _strips(at) -> dict:
    return next(json.loads(c.proto.spec)["data"][0] for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["layout"]["title"]["text"].startswith("What each method credits"))


@pytest.mark.slow
def test_attribution_hosted_draws_the_cheap_methods_and_the_button_adds_the_rest(hosted, monkeypatch):
    from experiments.explained import explain
    from experiments.faithfulness import FRACTIONS, Faithfulness, score_row
    from models import load

    text = "The old mill by the river bank flooded in spring"
    ig, occ = _count(monkeypatch, am, "integrated_gradients"), _count(monkeypatch, am, "occlusion")
    scored = _count(monkeypatch, ua, "score_row")
    at = open_view("attribution", text=text)
    assert not at.error and (len(ig), len(occ), len(scored)) == (0, 0, 0)  # nothing heavy on a default visit
    quick = _strips(at)
    assert quick["y"] == ["attention (last layer, mean of heads)", "attention rollout", "attention flow",
                          "gradient × input", "random"]
    assert not any(s.value == "Faithfulness on this text" for s in at.header)
    assert at.button(key="attr_full").label.startswith(heavy_requests()["attribution"][1])  # the load test presses it
    at.button(key="attr_full").click().run()
    assert not at.exception and not at.error
    assert (len(ig), len(occ), len(scored)) == (1, 1, 1)
    full = _strips(at)
    assert len(full["y"]) == 8 and "attr_full" not in [b.key for b in at.button]
    for name in quick["y"]:  # the cheap strips are the same numbers once the rest is drawn
        np.testing.assert_array_equal(_array(full["customdata"])[full["y"].index(name)],
                                      _array(quick["customdata"])[quick["y"].index(name)])
    # the laptop path outside the app: the same attributions and faithfulness on this text
    ex = explain(load("bert"), text)
    methods = tuple(m for m in am.ALL_METHODS if m != "best_head")
    atts = am.attribute_all(ex, am.ALL_METHODS, 64, "pad")
    row = full["y"].index("integrated gradients")
    np.testing.assert_allclose(_array(full["customdata"])[row], atts["integrated_gradients"].scores, atol=1e-5)
    one = Faithfulness(methods, FRACTIONS)
    score_row(one, ex, atts)
    table = next(d.value for d in at.dataframe if "comprehensiveness" in d.value.columns)
    np.testing.assert_allclose(table["comprehensiveness"], [round(one.summary[m]["comprehensiveness"], 4)
                                                            for m in methods], atol=2e-4)


@pytest.mark.slow  # one_text twice: with the kept quick results, then a laptop's from nothing
def test_attribution_hosted_button_reuses_the_kept_cheap_methods(hosted, monkeypatch):
    """The button's one_text takes attention, rollout, flow, gradient × input and random from the kept quick_text
    (each computed once, counted) and gives the same numbers as a laptop's one_text, which computes everything."""
    from experiments.explained import Explained
    from ui.runtime import cache

    counts = {name: _count(monkeypatch, am, name) for name in ("rollout", "attention_flow", "_grad_x_input",
                                                              "integrated_gradients", "occlusion")}
    seeded, weights = _count(monkeypatch, am, "_seeded"), _count(monkeypatch, Explained, "attention")
    args = ("bert", "cpu", "float32", "A crab on warm sand", None,
            tuple(m for m in am.ALL_METHODS if m != "best_head"), 8, "pad")
    quick = ua.quick_text(*args)
    assert quick[2] is None and set(quick[1]) == {"attention", "rollout", "flow", "grad_x_input", "random"}
    hosted = ua.one_text(*args)  # the button's path, quick_text's results kept
    assert {k: len(v) for k, v in counts.items()} == {"rollout": 1, "attention_flow": 1, "_grad_x_input": 1,
                                                      "integrated_gradients": 1, "occlusion": 1}
    assert (len(seeded), len(weights)) == (1, 1)  # neither random nor the attention weights made twice
    assert all(hosted[1][m] is quick[1][m] for m in quick[1])
    cache.STORES["results"].clear()
    monkeypatch.delenv(limits.ENV)
    laptop = ua.one_text(*args)  # nothing kept: every method computed here
    assert len(counts["rollout"]) == len(counts["_grad_x_input"]) == len(weights) == 2
    assert hosted[0] == laptop[0] and hosted[3] == laptop[3] and list(hosted[1]) == list(laptop[1])
    for m, a in laptop[1].items():
        b = hosted[1][m]
        np.testing.assert_array_equal(b.scores, a.scores)
        assert (b.output, b.baseline_output, b.target, b.delta) == (a.output, a.baseline_output, a.target, a.delta)
    assert hosted[2].summary == laptop[2].summary


def test_attribution_hosted_button_names_what_it_adds(hosted, monkeypatch):
    occ = _count(monkeypatch, am, "occlusion")
    at = open_view("attribution", text="A red kite circled above the barn", attr_methods=["attention", "occlusion"])
    assert not at.error and occ == [] and _strips(at)["y"] == ["attention (last layer, mean of heads)"]
    assert at.button(key="attr_full").label == "Occlusion and faithfulness on this text"


def test_attribution_on_a_laptop_computes_everything_without_a_button(monkeypatch):
    monkeypatch.delenv(limits.ENV, raising=False)
    ig = _count(monkeypatch, am, "integrated_gradients")
    at = open_view("attribution", text="The quiet lake froze over during the night",
                   attr_methods=["attention", "integrated_gradients", "random"], attr_steps=8)
    assert not at.error and len(ig) == 1 and "attr_full" not in [b.key for b in at.button]
    assert any(s.value == "Faithfulness on this text" for s in at.header)


def _grid(at) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if "JS" in json.dumps(json.loads(c.proto.spec)["data"][0].get("hovertemplate", "")))


@pytest.mark.slow  # the sizes table makes the five variants once
def test_precision_hosted_runs_no_variant_until_asked(hosted, monkeypatch):
    from models import load, variants

    text = "The ferry crossed the wide grey estuary at dawn"
    runs = _count(monkeypatch, ep, "compare_variant")
    at = open_view("precision", text=text)  # the default five variants
    assert not at.error and runs == []  # no variant ran on the text
    assert at.button(key="quant_go").label.startswith(heavy_requests()["precision"][1])  # the load test presses it
    assert len(at.get("plotly_chart")) == 1  # only the scale figure, which runs no model
    assert len(at.dataframe[0].value) == 6  # the sizes of fp32 and the five variants
    at.multiselect(key="quant_variants").set_value(["fp16", "int8_dynamic"]).run()
    at.button(key="quant_go").click().run()
    assert not at.exception and not at.error and len(runs) == 2
    grid = _grid(at)
    at.radio(key="quant_stat").set_value("largest token").run()  # a rerun after the press: the kept results
    assert not at.exception and len(runs) == 2 and "quant_go" not in [b.key for b in at.button]
    m = load("bert")  # the laptop path outside the app's caches
    for i, key in enumerate(["fp16", "int8_dynamic"]):
        want = ep.compare_variant(m.attend(text), variants.make(m, key, "bert"), text)
        np.testing.assert_allclose(_array(grid["data"][i]["z"]), want["mean_js"], atol=1e-6)
        np.testing.assert_allclose(_array(_grid(at)["data"][i]["z"]), want["max_js"], atol=1e-6)


def test_precision_on_a_laptop_compares_without_a_button(monkeypatch):
    monkeypatch.delenv(limits.ENV, raising=False)
    runs = _count(monkeypatch, ep, "compare_variant")
    at = open_view("precision", text="A heron waited in the reeds", quant_variants=["fp16"])
    assert not at.error and len(runs) == 1 and "quant_go" not in [b.key for b in at.button]
    assert len(at.get("plotly_chart")) == 3


def test_two_sessions_asking_for_the_same_text_at_once_compute_it_once(hosted, monkeypatch):
    """Both presses go through the server's queue (ui.runtime.work.queued) into one_text at the same moment: one
    computes,
    the other gets the kept result (the same object); then a third session's visit finds it kept and shows no button."""
    import threading

    from ui.runtime import work

    occ = _count(monkeypatch, am, "occlusion")
    text = "Two students pressed the button on the same poem"
    args = ("bert", "cpu", "float32", text, None, ("attention", "occlusion"), 8, "pad")
    start, got = threading.Barrier(2), []

    def press():
        start.wait()
        got.append(work.queued(lambda: ua.one_text(*args), note=lambda n: None))

    threads = [threading.Thread(target=press) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(occ) == 1 and len(got) == 2 and got[0] is got[1]
    at = open_view("attribution", text=text, attr_methods=["attention", "occlusion"], attr_steps=8)
    assert not at.error and len(occ) == 1 and "attr_full" not in [b.key for b in at.button]
    assert any(s.value == "Faithfulness on this text" for s in at.header)
