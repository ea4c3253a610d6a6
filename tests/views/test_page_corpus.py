"""AppTest of views/corpus.py through the app frame: the behaviour table, a head on its typical sentence,
links and navigation, uploads, models that cannot read English, and stopping a run."""
import base64
import html
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import limits
import models
from data import corpus
from ui import corpus as uc
from ui.runtime import cache
from ui.state import Selection

PAGE = "views/corpus.py"


def app(params: dict | None = None, **state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=300)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(PAGE)
    return at.run()


def figures(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def array(value) -> np.ndarray:
    """A figure's array as plotly writes it: a list, or {"dtype", "bdata", "shape"}."""
    if isinstance(value, dict):
        shape = [int(n) for n in str(value.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).reshape(shape)
    return np.array(value)


def ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.fixture(scope="module")
def bert():
    return models.load("bert")


def test_behaviour_table_and_the_head_on_its_typical_sentence(bert):
    at = app(corpus_n=100)
    ok(at)
    table = at.dataframe[0].value
    assert len(table) == 72 and list(table["head"][:3]) == ["L0 H0", "L0 H1", "L0 H2"]
    prev_head = table.set_index("head").loc["L0 H2"]
    assert prev_head["label"] == "previous token" and prev_head["prev"] > 0.9 and prev_head["consistency"] > 0.9
    fig = next(f for f in figures(at) if f["layout"].get("title", {}).get("text", "").startswith("L0 H0 on: "))
    title = html.unescape(fig["layout"]["title"]["text"])
    sentence = next(s for s in corpus.builtin(100).sentences if title[10:].startswith(s[:80]))
    np.testing.assert_allclose(array(fig["data"][0]["z"]), bert.attend(sentence).weights[0, 0], atol=1e-4)
    assert "100 sentences" in at.caption[0].value


def test_a_table_row_opens_that_head_and_the_heads_view():
    at = app(corpus_n=100)
    at.session_state["corpus_table"] = {"selection": {"rows": [2], "columns": [], "cells": []}}
    at.run()
    ok(at)
    assert (at.selectbox(key="corpus_layer").value, at.selectbox(key="corpus_head").value) == (0, 2)
    title = next(f["layout"]["title"]["text"] for f in figures(at) if "on: " in f["layout"].get("title", {}).get(
        "text", ""))
    assert title.startswith("L0 H2 on: ") and "previous token" in at.header[0].value
    at.button(key=next(b.key for b in at.button if b.key.startswith("corpus_open_"))).click().run()
    assert not at.exception and at.title[0].value == "Every head at a glance"
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (0, 2)
    assert html.unescape(title)[10:].startswith(at.session_state["text"][:80])


def test_link_and_navigation_keep_every_choice():
    params = {"corpus_n": "150", "corpus_layer": "L3", "corpus_head": "H1", "corpus_tab": "Search",
              "corpus_query": "the"}
    at = app(params)
    ok(at)
    assert not at.warning, [w.value for w in at.warning]
    assert (at.selectbox(key="corpus_layer").value, at.selectbox(key="corpus_head").value) == (3, 1)
    hits = at.dataframe[0].value
    assert len(hits) == 30 and all("«the»" in s for s in hits["sentence"])
    assert list(hits["weight"]) == sorted(hits["weight"], reverse=True)
    assert {k: at.query_params[k] for k in params} == params
    at.switch_page("views/heads.py").run()
    at.switch_page(PAGE).run()
    ok(at)
    assert at.text_input(key="corpus_query").value == "the" and at.selectbox(key="corpus_layer").value == 3


def test_similar_heads_and_queries_and_keys():
    at = app({"corpus_n": "100", "corpus_tab": "Similar heads", "corpus_sim_view": "2-D map"})
    ok(at)
    fig = figures(at)[0]
    assert len(array(fig["data"][0]["x"])) == 72 and fig["data"][0]["text"][2] == "L0 H2"
    at = app({"corpus_n": "100", "corpus_tab": "Queries and keys", "corpus_colour": "token"})
    ok(at)
    qk = figures(at)[0]
    assert [t["name"] for t in qk["data"]] == ["queries", "keys"] and len(array(qk["data"][0]["x"])) == len(
        array(qk["data"][1]["x"])) > 100
    assert "«" in qk["data"][0]["text"][0]


@pytest.mark.parametrize("name, data, says", [
    ("picture.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
    ("latin.txt", "Café crème.".encode("latin-1"), "UTF-8"),
    ("blank.txt", b"\n\n   \n", "no text"),
])
def test_bad_uploads_get_one_sentence(name, data, says):
    at = app(corpus_source="Upload")
    assert not at.exception and "Upload" in at.info[0].value
    at.file_uploader(key="corpus_upload").upload(name, data).run()
    assert not at.exception and len(at.error) == 1 and says in at.error[0].value


def test_csv_column_and_a_giant_line_upload():
    at = app(corpus_source="Upload")
    at.file_uploader(key="corpus_upload").upload(
        "notes.csv", b"id,text\n1,The cat sat on the mat. It purred.\n2,Dogs bark at night.\n").run()
    ok(at)
    at.selectbox(key="corpus_column").set_value(1).run()
    ok(at)
    assert "3 sentences" in at.caption[0].value
    at.file_uploader(key="corpus_upload").set_value(("giant.txt", b"word " * 50_000, "text/plain")).run()
    ok(at)
    assert any("cut" in w.value for w in at.warning) and any("128 tokens" in w.value for w in at.warning)


def test_models_that_cannot_read_the_corpus_and_the_toy(monkeypatch):
    at = app(corpus_n=100, model="tiny")
    assert not at.exception and "only sorts digits" in at.error[0].value
    at = app(corpus_n=100, model="seq2seq-luong")
    assert not at.exception and "self-attention" in at.error[0].value
    monkeypatch.setenv(limits.ENV, "1")
    at = app(corpus_n=100, model="toy", corpus_tab="Queries and keys")
    ok(at)
    assert "lays its heads out otherwise" in at.info[0].value
    assert at.slider(key="corpus_n").max == limits.HOSTED.corpus_sentences


def test_a_stopped_run_shows_what_it_has_and_continues(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path))
    cache.STORES["results"].clear()
    sentences = corpus.builtin(100).sentences
    key = uc._key(Selection("", None, "toy", "cpu", "float32"), sentences)
    at = app(corpus_n=100, model="toy", _corpus_stopped=key)
    assert not at.exception and "first 0 of 100" in at.info[0].value and not at.dataframe
    at.button(key="corpus_continue").click().run()
    ok(at)
    assert len(at.dataframe[0].value) == 2 and "100 sentences" in at.caption[0].value


def test_head_finder_scores_and_pruning_hints_read_only_what_the_view_computed(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path))
    cache.STORES["results"].clear()  # results this server already holds would not be written to the new folder
    sel = Selection("", None, "toy", "cpu", "float32")
    assert uc.head_scores(sel) is None and uc.redundancy_hints(sel) is None   # nothing computed: nothing run
    at = app(corpus_n=100, model="toy")
    ok(at)
    scores, n = uc.head_scores(sel)
    assert n == 64 and scores["previous token"].shape == (1, 2)               # the first whole shard
    pairs, n = uc.redundancy_hints(sel, threshold=1.0)
    assert n == 64 and {pairs[0]["head"], pairs[0]["twin"]} == {"L0 H0", "L0 H1"}


def test_hosted_uploads_leave_no_file_behind(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path))
    monkeypatch.setenv(limits.ENV, "1")
    at = app(corpus_source="Upload", model="toy")
    at.file_uploader(key="corpus_upload").upload("mine.txt", b"My private notes. Nobody else reads them.").run()
    ok(at)
    assert "2 sentences" in at.caption[0].value and not list(tmp_path.glob("*.npz"))
    monkeypatch.delenv(limits.ENV)
    at.file_uploader(key="corpus_upload").upload("mine2.txt", b"On a laptop the cache keeps it. Fine.").run()
    ok(at)
    assert len(list(tmp_path.glob("*.npz"))) == 1
