"""Each api.figures function against the figure its view draws for the same input: the same traces, number for
number (AppTest runs the real view through the app frame), or, where a view draws a long run the test cannot
repeat cheaply (attribution, faithfulness, corpus), the view's own viz call on the experiment's own result."""
import json

import numpy as np
import plotly.io as pio
import pytest
from streamlit.testing.v1 import AppTest

import api
from tests.views.kept_figures import as_shown
from ui.patching import PAIRS
from ui.runtime import cache

pytestmark = pytest.mark.usefixtures("one_thread")
TEXT = "The animal didn't cross the street because it was too tired."
CODE = "import os\nos.path."


def _view(page: str, model: str, text: str, tab: dict | None = None, **state) -> AppTest:
    """The view through the app frame, its widgets preset (state), a tab opened by its link (tab)."""
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["model"], at.session_state["text"] = model, text
    for key, value in state.items():
        at.session_state[key] = value
    for key, value in (tab or {}).items():
        at.query_params[key] = value
    at.switch_page(f"views/{page}.py")
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _data(fig) -> list[dict]:
    return json.loads(pio.to_json(fig, validate=False))["data"]


def _same(spec: dict, fig) -> None:
    """The view's chart and the api's figure: every trace equal, and the same title and axes."""
    assert spec["data"] == _data(fig)
    mine = json.loads(pio.to_json(fig, validate=False))["layout"]
    for key in ("title", "xaxis", "yaxis", "annotations"):
        assert spec["layout"].get(key) == mine.get(key), key


@pytest.fixture(scope="module")
def bert():
    return api.load("bert")


@pytest.fixture(scope="module")
def gpt():
    return api.load("gpt")


def test_heads_and_one_head_are_the_heads_views(bert):
    charts = _charts(_view("heads", "bert", TEXT))
    t = api.attend(bert, TEXT)
    _same(charts[0], api.figures.heads(t))
    _same(charts[1], api.figures.head(t, layer=0, head=0))
    at = _view("heads", "bert", TEXT, heads_hide=True, heads_scale="shared", heads_layer=2, heads_head=7)
    charts = _charts(at)
    _same(charts[0], api.figures.heads(t, shared_scale=True, hide=True))
    _same(charts[1], api.figures.head(t, 2, 7, hide=True))


def test_graph_layers_rollout_and_collectors_are_the_graph_views(bert):
    text = "The river bank was dirty."
    t = api.attend(bert, text)
    _same(_charts(_view("graph", "bert", text))[0], api.figures.graph(t))
    charts = _charts(_view("graph", "bert", text, graph_view="All layers"))
    _same(charts[0], api.figures.layers(t))
    _same(charts[1], api.figures.rollout(t))
    assert len(charts[1]["data"]) == 3  # raw attention, rollout and flow, as the view draws up to 32 tokens
    _same(_charts(_view("graph", "bert", text, graph_view="Who collects attention"))[0], api.figures.collectors(t))


def test_inside_a_head_is_the_step_by_step_panels(bert):
    charts = _charts(_view("inside_head", "bert", "The river bank was dirty", ih_bert_layer=1, ih_bert_head=3))
    figs = api.figures.inside_head(bert, "The river bank was dirty", layer=1, head=3)
    assert len(charts) == len(figs) == 4
    for spec, fig in zip(charts, figs):
        _same(spec, fig)


def test_next_token_probabilities_block_lens_and_dla_are_the_views(gpt):
    parts = api.next_token(gpt, CODE)
    _same(_charts(_view("next_token", "gpt", CODE))[0], api.figures.probabilities(gpt, CODE))
    charts = _charts(_view("next_token", "gpt", CODE, tab={"nt_tab": "The whole block"}))
    for spec, fig in zip(charts, api.figures.block(parts), strict=True):
        _same(spec, fig)
    _same(_charts(_view("next_token", "gpt", CODE, tab={"nt_tab": "Logit lens"}))[0], api.figures.lens(parts))
    bars, grid = _charts(_view("next_token", "gpt", CODE, tab={"nt_tab": "Direct logit attribution"}))
    _same(bars, api.figures.dla(parts))
    _same(grid, api.figures.dla_heads(parts))


def test_patching_map_is_the_patching_views(gpt):
    # the view's scores computed here, under this test's one torch thread as api.patching's are: an entry another
    # test kept (tests/views/test_page_patching.py, on more threads) differs in float32's last bits
    cache.STORES["results"].clear()
    at = _view("patching", "gpt", "")
    jobs = at.session_state["_work_jobs"] if "_work_jobs" in at.session_state else {}
    if "patching" in jobs:
        jobs["patching"].thread.join(180)
        at.run()
    pair = PAIRS["gpt"]
    table = api.patching(gpt, pair.clean, pair.corrupt, pair.answer, pair.wrong)
    _same(_charts(at)[0], api.figures.patching(table))



def test_circuit_graph_is_the_circuits_views():
    from data.circuit_tasks import repeats

    at = _view("circuits", "induction", "")
    jobs = at.session_state["_work_jobs"] if "_work_jobs" in at.session_state else {}
    if "circuits" in jobs:
        jobs["circuits"].thread.join(300)
        at.run()
    table = api.circuit(api.load("induction"), repeats(4))
    _same(_charts(at)[0], api.figures.circuit(table, top=20))

def test_attribution_strips_are_the_views_call_on_the_same_attributions(bert):
    from experiments.attribution_methods import LABELS, attribute_all
    from experiments.explained import explain
    from viz.attribution import strips

    methods = ("attention", "rollout", "grad_x_input", "random")
    table = api.attribution(bert, "The river bank was dirty", methods=methods)
    assert list(table.columns) == ["token", "special", *methods]
    ex = explain(bert, "The river bank was dirty")
    view = strips(attribute_all(ex, methods, 64, "pad"), LABELS)  # what views/attribution.py draws from one_text
    assert _data(api.figures.attribution(table)) == as_shown(view)["data"]


def test_faithfulness_curves_are_the_views_call_on_the_same_rows(bert):
    from experiments.attribution_methods import LABELS
    from experiments.faithfulness import FRACTIONS, measure
    from viz.attribution import curves

    texts = ["The river bank was dirty.", "She paid at the bank.", "It was too tired to cross."]
    table = api.faithfulness(bert, texts, methods=("attention", "random"))
    res = measure(bert, [{"text": t} for t in texts], ("attention", "random"), FRACTIONS, 64, "pad", heads=False)
    assert list(table["method"]) == ["attention", "random"]
    np.testing.assert_allclose(table["comprehensiveness"], [res.summary[m]["comprehensiveness"] for m in res.methods])
    view = curves(res.curves(), res.fractions, LABELS, table.attrs["value"])
    assert _data(api.figures.faithfulness(table)) == as_shown(view)["data"]


def test_corpus_map_is_the_views_call_on_the_corpus_means(bert, tmp_path):
    from analysis import corpus_stats, patterns
    from experiments import corpus as ec
    from viz.corpus import behaviour_map

    sentences = ["The river bank was quiet.", "She paid at the bank.", "It was too tired to cross."]
    table = api.corpus(bert, sentences, folder=tmp_path)
    means = corpus_stats.means(ec.run(bert, sentences, folder=tmp_path).stats)  # as views/corpus.py reads them
    for f, name in enumerate(patterns.FEATURES):
        view = behaviour_map(means[..., f], name, name != "distance")
        assert _data(api.figures.corpus(table, name)) == as_shown(view)["data"]


def test_kv_cache_charts_are_the_views_for_the_same_records():
    small = {"kv_layers": 1, "kv_d_model": 64, "kv_nh": 4, "kv_kvh": 2, "kv_tokens": 16}
    at = _view("kv_cache", "bert", TEXT, **small)
    at.button(key="kv_go").click().run()
    job = at.session_state["_work_jobs"]["kv_generate"]
    job.thread.join(120)
    at.run()
    records, per_token = job.args[-1], 2 * 1 * 2 * 16 * 4  # 1 layer, 2 kv heads of 64 / 4, float32
    charts = _charts(at)[:3]  # latency, total time, memory
    for spec, fig in zip(charts, api.figures.kv_cache(api.kv_table(records, per_token)), strict=True):
        _same(spec, fig)
    table = api.kv_cache(layers=1, d_model=64, heads=4, kv_heads=2, new_tokens=16, rounds=1)  # a run of its own
    assert len(table) == 16 and table.attrs["per_token"] == per_token
    assert (table["cache_bytes"] == table["positions"] * per_token).all()


def test_queries_and_keys_plane_is_the_corpus_views(bert):
    from data import corpus

    at = _view("corpus", "bert", TEXT, tab={"corpus_n": "50", "corpus_tab": "Queries and keys"},
               corpus_layer=2, corpus_head=5, corpus_colour="position")
    spec = next(c for c in _charts(at) if "queries and keys" in c["layout"]["title"]["text"])
    fig = api.figures.queries_keys(bert, corpus.builtin(50).sentences, layer=2, head=5, colour_by="position")
    _same(spec, fig)
