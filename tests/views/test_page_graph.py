"""AppTest of the graph page: the packaged BERT, and synthetic self / causal / cross traces."""
import dataclasses
import importlib.util
import json
import sys
import types

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import limits
import models
from analysis.trace import AttentionTrace

FAKE = "fake_graph_models"


def _trace(kind: str, n: int = 7, layers: int = 3) -> AttentionTrace:
    rng = np.random.default_rng(len(kind) + n)
    nk = n + 2 if kind == "cross" else n
    logits = rng.normal(size=(layers, 2, n, nk)) * 2
    if kind == "causal":
        logits = np.where(np.tril(np.ones((n, nk))) > 0, logits, -np.inf)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    tokens = [f"<q{i}>" for i in range(n)]
    keys = tokens if kind != "cross" else [f"src{j}" for j in range(nk)]
    return AttentionTrace(tokens, keys, (w / w.sum(-1, keepdims=True)).astype(np.float32), kind)


class _Fake:  # keeps models.contract.AttentionModel: views decide by the family a model says it is
    label, device, family, notices = "synthetic attention for tests", "cpu", "toy", ()
    predicts = next_token_model = tokenizer = kv_head_of = None
    windows = ()

    def __init__(self, name):
        self.kind, self.n = name.split("-")[1], int(name.split("-")[2])
        self.settings = types.SimpleNamespace(causal=self.kind == "causal")  # what a toy says of its mask

    def attend(self, text, text_b=None):
        return _trace(self.kind, self.n)


@pytest.fixture
def fake_models(monkeypatch):
    module = types.ModuleType(FAKE)
    module.__spec__ = importlib.util.spec_from_loader(FAKE, loader=None)
    module.load = lambda name, device, dtype: _Fake(name)
    monkeypatch.setitem(sys.modules, FAKE, module)
    for name in ("fake-self-7", "fake-causal-7", "fake-cross-7", "fake-self-9"):
        monkeypatch.setitem(models._MODULES, name, FAKE)


def _page(model: str, view: str) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=60)
    at.session_state["model"] = model
    at.run()
    at.switch_page("views/graph.py").run()
    at.radio(key="graph_view").set_value(view).run()
    assert not at.exception, at.exception
    return at


def _charts(at):
    return at.get("plotly_chart")


def test_bert_every_view():
    at = _page("bert", "One layer")
    assert "nodes" in at.caption[0].value and "L5," in at.caption[0].value  # layers numbered from 0
    assert len(_charts(at)) == 1
    layout = json.loads(_charts(at)[0].proto.spec)["layout"]
    assert [a["text"] for a in layout["annotations"]] == ["<b>queries (layer output)</b>", "<b>keys (layer input)</b>"]
    assert "each query's 3<br>heaviest keys" in layout["legend"]["title"]["text"]  # what an edge is, which are kept
    edges = at.dataframe[0].value  # the graph's edges as a table: 3 per query, strongest first
    trace = models.load("bert").attend(at.session_state["text"])
    fused = np.asarray(trace.weights[5]).mean(axis=0)  # [T, T]: L5, heads fused by their mean
    assert len(edges) == 3 * fused.shape[0] and list(edges["weight"]) == sorted(edges["weight"], reverse=True)
    np.testing.assert_allclose(edges["weight"].iloc[0], fused.max(), atol=1e-4)
    at.radio(key="graph_layout").set_value("force").run()
    at.radio(key="graph_rule").set_value("above a threshold").run()
    assert not at.exception and len(_charts(at)) == 1
    at.radio(key="graph_view").set_value("All layers").run()
    assert not at.exception and not at.warning  # short sentence: exact flow, no stand-in
    assert len(_charts(at)) == 2
    from analysis.flow import attention_flow
    from analysis.rollout import rollout

    *_, raw, rolled, flowed = (d.value.to_numpy() for d in at.dataframe)  # the layered edges, then each panel
    np.testing.assert_allclose(raw, np.asarray(trace.weights[-1]).mean(axis=0), atol=1e-4)
    np.testing.assert_allclose(rolled, rollout(trace.weights, 0.5, "mean"), atol=1e-4)
    np.testing.assert_allclose(flowed, attention_flow(trace.weights, 0.5, "mean"), atol=1e-4)
    at.radio(key="graph_view").set_value("Who collects attention").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table.columns[:2]) == ["token", "in L0"] and "PageRank L5" in table.columns
    assert "[CLS] ·0" in set(table["token"]) or "[SEP]" in " ".join(table["token"])


@pytest.mark.parametrize("kind", ["self", "causal"])
def test_synthetic_square_traces(fake_models, kind):
    at = _page(f"fake-{kind}-7", "All layers")
    assert not at.warning and len(_charts(at)) == 2
    at.radio(key="graph_fusion").set_value("max").run()
    at.slider(key="graph_residual").set_value(0.0).run()
    assert not at.exception and len(_charts(at)) == 2


def test_cross_attention_is_bipartite(fake_models):
    at = _page("fake-cross-7", "One layer")
    assert "cross-attention" in at.caption[0].value and "16 nodes" in at.caption[0].value
    at.radio(key="graph_view").set_value("All layers").run()
    assert not at.exception and "no such path" in at.info[0].value and not _charts(at)
    at.radio(key="graph_view").set_value("Who collects attention").run()
    assert not at.exception and any("PageRank needs self-attention" in c.value for c in at.caption)
    assert len(at.dataframe[0].value) == 9  # one row per source token


def test_flow_over_the_size_cap_shows_rollout(fake_models, monkeypatch):
    monkeypatch.setattr(limits, "LAPTOP", dataclasses.replace(limits.LAPTOP, flow_tokens=8))
    at = _page("fake-self-9", "All layers")
    assert "up to 8 tokens; this text has 9" in at.warning[0].value
    assert len(_charts(at)) == 2


def test_flow_over_inline_size_runs_as_a_job_with_progress_and_a_budget(fake_models, monkeypatch):
    monkeypatch.setitem(models._MODULES, "fake-self-40", FAKE)
    at = _page("fake-self-40", "All layers")
    assert any("1,600 max-flow problems" in c.value for c in at.caption)  # 40 x 40, shown before it runs
    assert '"flow"' not in _charts(at)[-1].proto.spec  # raw attention and rollout while flow runs
    at.session_state["_work_jobs"]["graph_flow"].thread.join(120)
    at.run()
    assert not at.exception and not at.error
    assert '"flow"' in _charts(at)[-1].proto.spec
