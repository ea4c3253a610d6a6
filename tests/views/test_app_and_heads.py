"""AppTest of the frame and the heads page: real app, real MiniLM."""
import pytest
from streamlit.testing.v1 import AppTest

from models.hf import minilm_path


def _app():
    return AppTest.from_file("../../app.py", default_timeout=120)


def _overview_z(at):
    figs = [c for c in at.get("plotly_chart")]
    import json
    spec = json.loads(figs[0].proto.spec)
    return spec["data"][0]


def test_home_opens_with_default_sentence_and_sidebar():
    at = _app().run()
    assert not at.exception
    assert at.sidebar.text_area(key="text").value.strip()
    assert {"model", "device"} <= {s.key for s in at.sidebar.selectbox}
    assert at.title[0].value == "Attention Explorer"


def test_heads_page_draws_overview_and_head_and_follows_the_text():
    at = _app().run()
    at.switch_page("views/heads.py").run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 2
    assert "MiniLM-L6, BERT architecture" in at.caption[0].value
    before = at.caption[0].value
    at.sidebar.text_area(key="text").set_value("A much shorter one.").run()
    assert not at.exception
    assert at.caption[0].value != before and "7 tokens" in at.caption[0].value
    at.toggle(key="heads_hide").set_value(True).run()
    assert not at.exception and any("renormalised" in c.value for c in at.caption)



def test_hide_is_offered_for_the_special_tokens_the_model_has():
    import json

    at = _app()
    at.session_state["model"], at.session_state["text"] = "gpt", "The if statement"
    at.run()
    at.switch_page("views/heads.py").run()
    toggle = at.toggle(key="heads_hide")
    assert toggle.label == "Hide <s> and renormalise rows"  # the built-in gpt's start token, not [CLS]/[SEP]
    toggle.set_value(True).run()
    head = json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]
    assert not at.exception and "<s>" not in head["x"] + head["y"] and head["x"][0] == "The"
    at.session_state["model"] = "toy"  # no special token at all: nothing to offer, and why
    at.run()
    assert not at.exception and not [t for t in at.toggle if t.key == "heads_hide"]
    assert any(c.value.startswith("No special tokens to hide") for c in at.caption)

def test_sidebar_values_survive_page_switches():
    at = _app().run()
    at.sidebar.text_area(key="text").set_value("Keep me here.").run()
    at.switch_page("views/heads.py").run()
    at.switch_page("views/home.py").run()
    assert at.sidebar.text_area(key="text").value == "Keep me here."


def test_changing_the_model_changes_what_is_shown():
    at = _app().run()
    at.switch_page("views/heads.py").run()
    at.sidebar.selectbox(key="model").set_value("hf:").run()
    at.sidebar.text_input(key="hf_spec").set_value(minilm_path()).run()
    assert not at.exception
    assert "(bert, 6 layers × 12 heads)" in at.caption[0].value


@pytest.mark.parametrize("text, message", [
    ("   ", "Type a sentence"),
    ("<img src=x onerror=alert(1)> <script>alert(1)</script>", None),
    ("word " * 600, "Truncated to 512 tokens"),
])
def test_bad_text_gets_a_sentence_not_a_traceback(text, message):
    at = _app().run()
    at.switch_page("views/heads.py").run()
    at.sidebar.text_area(key="text").set_value(text).run()
    assert not at.exception
    shown = " ".join(m.value for m in [*at.info, *at.warning, *at.error])
    if message:
        assert message in shown
    else:
        assert len(at.get("plotly_chart")) == 2


def test_unusable_model_is_one_clear_sentence():
    at = _app().run()
    at.switch_page("views/heads.py").run()
    at.sidebar.selectbox(key="model").set_value("hf:").run()
    at.sidebar.text_input(key="hf_spec").set_value("nobody/nothing-here").run()
    assert not at.exception
    assert "cannot be reached" in at.error[0].value


def _absent_device_view():
    import streamlit as st

    from ui.show import current_trace

    st.session_state["device"] = "cuda"
    st.session_state["dtype"] = "float16"
    current_trace()


def test_absent_device_falls_back_to_cpu_and_says_so():
    import torch

    if torch.cuda.is_available():
        pytest.skip("cuda is present here")
    at = AppTest.from_function(_absent_device_view, default_timeout=120).run()
    assert not at.exception
    assert any("not available here; using cpu" in w.value for w in at.warning)


def test_clicking_a_head_in_the_overview_opens_it():
    at = _app().run()
    at.switch_page("views/heads.py").run()
    assert not at.exception
    # what the browser sends back for a click on the tile of L4 H7 (the chart's selection state)
    at.session_state["heads_overview_0"] = {"selection": {"points": [{"x": "H7 · river (2)", "y": "L4 · the (1)"}],
                                                          "point_indices": [0], "box": [], "lasso": []}}
    at.run()
    assert not at.exception
    assert at.selectbox(key="heads_layer").value == 4 and at.selectbox(key="heads_head").value == 7
    assert "L4 H7" in at.get("plotly_chart")[1].proto.spec


def test_bertviz_over_its_line_budget_is_refused_with_a_sentence(monkeypatch):
    import limits

    monkeypatch.setenv(limits.ENV, "1")
    at = _app().run()
    at.switch_page("views/heads.py").run()
    at.sidebar.text_area(key="text").set_value("word " * 200).run()  # 202 tokens: 72 x 202^2 = 2.9M lines
    at.toggle(key="heads_bertviz").set_value(True).run()
    at.radio(key="heads_bertviz_view").set_value("Model view").run()
    assert not at.exception
    assert "lines to draw, over the 1,200,000 one request may use here" in at.error[0].value
    assert not at.get("iframe")


def test_a_model_that_cannot_read_the_text_offers_a_switch():
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.session_state["model"] = "tiny"  # the tiny decoder reads digits only
    at.run()
    at.switch_page("views/heads.py").run()
    assert not at.exception and "only sorts digits" in at.error[0].value
    at.button(key="heads_err_to_bert").click().run()
    assert not at.exception and not at.error and at.sidebar.selectbox(key="model").value == "bert"


def test_bertviz_with_special_tokens_hidden_sizes_its_frame_without_renormalising_every_head(monkeypatch):
    """The frame's height follows the tokens drawn (special ones hidden), by bertviz's own layout; the page hides them
    in what it draws (one head's matrix), never in the whole (L, H, T, T) attention on a rerun."""
    import analysis.special as special
    import viz.bertviz_offline as bv
    from models import load

    shapes, sized = [], []
    hide, height = special.hide_special, bv.height
    monkeypatch.setattr(special, "hide_special", lambda w, *a, **k: shapes.append(w.shape) or hide(w, *a, **k))
    monkeypatch.setattr(bv, "height", lambda *a: sized.append(a) or height(*a))
    at = _app().run()
    at.switch_page("views/heads.py").run()
    at.toggle(key="heads_hide").set_value(True).run()
    at.toggle(key="heads_bertviz").set_value(True).run()
    assert not at.exception
    shapes.clear()
    at.radio(key="heads_bertviz_view").set_value("Model view").run()
    assert not at.exception and shapes and all(len(s) == 2 for s in shapes), shapes
    tokens = load("bert").attend(at.session_state["text"]).tokens
    drawn = len([t for t in tokens if t not in ("[CLS]", "[SEP]")])
    assert sized[-1] == (drawn, 6, 12, "model_view") and len(at.get("iframe")) == 1


def test_the_open_head_has_its_numbers_as_a_table_and_each_chart_a_sentence():
    import json

    import numpy as np

    import models

    at = _app().run()
    at.switch_page("views/heads.py").run()
    at.selectbox(key="heads_layer").set_value(5).run()
    at.selectbox(key="heads_head").set_value(11).run()
    assert not at.exception
    overview, table = at.dataframe
    text = at.sidebar.text_area(key="text").value
    every = np.asarray(models.load("bert").attend(text).weights)  # [L, H, T, T], independent of the page
    np.testing.assert_allclose(table.value.to_numpy(), every[5, 11].round(4), atol=1e-4)
    # the overview's table: a row per head, its largest weight and the largest mean over queries of one key
    assert list(overview.value.index) == [f"L{i} H{h}" for i in range(6) for h in range(12)]
    np.testing.assert_allclose(overview.value["largest weight"], every.max(axis=(2, 3)).ravel(), atol=1e-4)
    np.testing.assert_allclose(overview.value["its mean weight"], every.mean(axis=2).max(axis=2).ravel(), atol=1e-4)
    alts = [c.proto.alt for c in at.get("plotly_chart")]
    assert "strongest single weights" in alts[0] and alts[1].startswith("L5 H11.")
    assert all(json.loads(c.proto.spec)["data"] for c in at.get("plotly_chart"))
