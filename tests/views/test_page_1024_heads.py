"""AppTest with 1,024 heads (Llama-2-7B's 32 layers × 32 heads, random weights, hidden size 64: bench.heads_1024):
the Heads view's overview within its payload bound, Find a head ranking all of them, and the corpus view's
table paged, searched and filtered by layer, a row of a filtered page picking its own head. Slow group: a
32-layer model in AppTest takes tens of seconds on a busy 2-core machine."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from bench.heads_1024 import HEADS, LAYERS, folder, text_of
from corpus_heads.__main__ import run
from viz.heads import tile_side

MAX_PAYLOAD = 2_000_000  # the heads overview's bound, as for MiniLM's 72 heads


def app(page: str, **state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=300)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(page)
    return at.run()


@pytest.fixture(scope="module")
def model() -> dict:
    return {"model": "hf:", "hf_spec": str(folder())}


@pytest.mark.slow
def test_heads_overview_of_1024_heads_within_the_payload_bound(model):
    at = app("views/heads.py", text=text_of(128), **model)
    assert not at.exception and not at.error, [e.value for e in at.error]
    spec = at.get("plotly_chart")[0].proto.spec
    side = tile_side(LAYERS * HEADS)                                    # 16 cells a side: 8 tokens a block
    assert len(spec.encode()) <= MAX_PAYLOAD and side == 16
    z = json.loads(spec)["data"][0]["z"]
    rows = len(z) if isinstance(z, list) else int(z["shape"].split(",")[0])
    assert rows == LAYERS * (side + 1) - 1 or rows == LAYERS * (side + 1)  # every layer drawn, pooled
    at.selectbox(key="heads_layer").set_value(31).run()
    at.selectbox(key="heads_head").set_value(31).run()
    assert not at.exception and any("L31 H31" in json.dumps(json.loads(c.proto.spec)["layout"].get("title", ""))
                                    for c in at.get("plotly_chart"))


@pytest.mark.slow
def test_find_a_head_ranks_1024_heads(model):
    at = app("views/finder.py", text=text_of(64), **model)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.markdown[0].value.startswith("**1. L")
    hover = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["hovertext"]
    assert len(hover) == LAYERS * HEADS and hover[-1].startswith("L31 H31")   # every head scored and drawn


@pytest.fixture(scope="module")
def results(model, tmp_path_factory) -> str:
    """Ten sentences run through the 1,024-head model by python -m corpus_heads: the result folder."""
    root = tmp_path_factory.mktemp("r1024")
    (root / "c.txt").write_text("\n".join(f"The fox {w} the dog." for w in ("saw", "met", "fed", "led", "hid", "bit",
                                                                          "got", "let", "ran", "sat")) + "\n")
    run(["--model", f"hf:{model['hf_spec']}", "--data", str(root / "c.txt"), "--out", str(root / "out")])
    return str(root / "out")


@pytest.mark.slow
def test_corpus_table_of_1024_heads_pages_searches_and_filters(model, results):
    at = app("views/corpus.py", corpus_source="Result folder", corpus_result=results, **model)
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert len(table) == 100 and table["head"][0] == "L0 H0"          # a page, not 1,024 rows
    assert any("1,024 of 1,024 rows match; page 1 of 11" in c.value for c in at.caption)
    at.slider(key="corpus_table_layers").set_value((30, 31)).run()
    table = at.dataframe[0].value
    assert len(table) == 64 and set(table["head"].str.split().str[0]) == {"L30", "L31"}
    at.text_input(key="corpus_table_find").set_value("H17").run()
    table = at.dataframe[0].value
    assert list(table["head"]) == ["L30 H17", "L31 H17"]
    at.session_state["corpus_table"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert (at.selectbox(key="corpus_layer").value, at.selectbox(key="corpus_head").value) == (31, 17)


@pytest.mark.slow
def test_similar_heads_of_1024_heads_compares_groups_of_layers_and_says_so(model, results):
    at = app("views/corpus.py", corpus_source="Result folder", corpus_result=results, corpus_tab="Similar heads",
             **model)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("groups of 4 consecutive layers (128 heads, at most 144 per group)" in c.value for c in at.caption)
    assert [o for o in at.selectbox(key="corpus_sim_group").options][:2] == ["L0–L3", "L4–L7"]
    tree = json.loads(at.get("plotly_chart")[0].proto.spec)
    leaves = tree["layout"]["xaxis"]["ticktext"]
    assert len(leaves) == 128 and {t.split()[0] for t in leaves} == {"L0", "L1", "L2", "L3"}
    assert "layers L0–L3" in tree["layout"]["title"]["text"]
    at.selectbox(key="corpus_sim_group").set_value(7).run()
    leaves = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["xaxis"]["ticktext"]
    assert not at.exception and {t.split()[0] for t in leaves} == {"L28", "L29", "L30", "L31"}
    at.radio(key="corpus_sim_view").set_value("2-D map").run()
    points = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert not at.exception and len(points["text"]) == 128 and points["text"][0] == "L28 H0"


@pytest.mark.slow
def test_a_model_past_the_overview_budget_gets_a_notice_and_a_slice(tmp_path, monkeypatch):
    from bench import tiny_families

    monkeypatch.setattr(tiny_families, "SIZE", dict(layers=80, heads=64, d=64, ffn=64, positions=64))
    big = tiny_families.write("llama", tmp_path / "llama-5120h")                 # 5,120 heads: over 4,608
    at = app("views/heads.py", model="hf:", hf_spec=str(big), text="the fox")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "5,120 heads are more than the overview draws at once" in at.warning[0].value
    assert "72 layers at a time" in at.warning[0].value
    spec = at.get("plotly_chart")[0].proto.spec
    assert len(spec.encode()) <= MAX_PAYLOAD and json.loads(spec)["layout"]["yaxis"]["ticktext"][-1] == "L71"
    at.slider(key="heads_first").set_value(8).run()
    ticks = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["yaxis"]["ticktext"]
    assert not at.exception and (ticks[0], ticks[-1]) == ("L8", "L79")
