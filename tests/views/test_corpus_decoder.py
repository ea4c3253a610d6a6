"""AppTest of Heads across a corpus on a decoder (a tiny random Llama as 'hf:<folder>'): search leaves out the
trivial position-0 hits unless asked, queries and keys are drawn after RoPE, and the behaviour map's colours span
a stated range instead of the values' own spread."""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import models
from data import corpus
from tests.views.test_page_corpus import array

N = 50


def _app(folder: str, **params) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.query_params["corpus_n"] = str(N)
    for key, value in params.items():
        at.query_params[key] = value
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = folder
    at.run()
    at.switch_page("views/corpus.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _figure(at: AppTest) -> dict:
    return json.loads(at.get("plotly_chart")[0].proto.spec)


def _map(at: AppTest, word: str) -> dict:
    """The behaviour map: the heatmap whose colour bar title holds `word`."""
    specs = (json.loads(c.proto.spec)["data"][0] for c in at.get("plotly_chart"))
    return next(d for d in specs if d["type"] == "heatmap" and word in d["colorbar"]["title"]["text"])


@pytest.fixture(scope="module")
def llama(tiny_folder):
    return tiny_folder("llama")


def test_search_on_a_decoder_leaves_out_position_0_unless_asked(llama):
    at = _app(llama, corpus_tab="Search")
    assert at.checkbox(key="corpus_first").value is False
    assert any("Position 0 is left out" in c.value for c in at.caption)
    hits = at.dataframe[0].value
    m = models.load(f"hf:{llama}")  # the reference, apart: each query's largest weight in L0 H0, from attend()
    best = sorted((float(w.max()) for s in corpus.builtin(N).sentences
                   for w in m.attend(s).weights[0, 0][1:]), reverse=True)[:30]
    np.testing.assert_allclose(list(hits["weight"]), best, atol=1e-3)
    assert len(hits) == 30 and not any(s.startswith("«") for s in hits["sentence"])  # no query at position 0
    at.checkbox(key="corpus_first").check().run()
    assert not at.exception and not any("Position 0 is left out" in c.value for c in at.caption)
    hits = at.dataframe[0].value
    assert list(hits["weight"]) == [1.0] * 30 and all(s.startswith("«<s>» ") for s in hits["sentence"])


def test_queries_and_keys_of_a_decoder_after_rope(llama):
    at = _app(llama, corpus_tab="Queries and keys")
    assert not at.info, [i.value for i in at.info]
    fig = _figure(at)
    assert [t["name"] for t in fig["data"]] == ["queries", "keys"] and len(array(fig["data"][0]["x"])) > 100
    assert any("after the rotation (RoPE)" in c.value for c in at.caption)


def test_the_behaviour_map_spans_a_stated_range(llama):
    at = _app(llama)
    heat = _map(at, "colour")
    assert (heat["zmin"], heat["zmax"]) == (0.0, 1.0) and "0 to 100%" in heat["colorbar"]["title"]["text"]
    z = array(heat["z"])
    assert np.nanmax(z) - np.nanmin(z) < 0.05  # random heads differ by little: the colours say so, not stretched
    at.selectbox(key="corpus_feature").set_value("distance").run()
    heat = _map(at, "distance")
    z = array(heat["z"])
    assert heat["zmin"] == 0.0 and heat["zmax"] == pytest.approx(np.nanmax(z), abs=1e-4)
    assert f"0 to {np.nanmax(z):.2f}" in heat["colorbar"]["title"]["text"]
