"""AppTest: every example's link opens its view with its model, text and head; the lesson walks the views in
order from ?lesson=n; presenter mode restyles the page and its figures."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from ui.classroom import links
from ui.classroom.lesson import EXAMPLES, HEAD_KEYS, LESSON
from ui.views import VIEWS

TITLES = {"heads": "Every head at a glance", "inside_head": "Inside one head", "finder": "Find a head",
          "seq2seq": "Seq2seq attention", "positional": "Positional encodings", "bpe": "BPE merges, step by step",
          "kv_cache": "KV cache", "pruning": "Head pruning lab", "compare": "Compare two sentences",
          "graph": "Attention as a graph", "next_token": "Next token", "patching": "Patching",
          "induction": "Induction heads", "attribution": "Does attention explain the output?"}


def _fresh(params: dict, view: str) -> AppTest:
    """A new session opening /<view>?<params>, as a link pasted in a new browser would."""
    at = AppTest.from_file("../../app.py", default_timeout=240)
    for k, v in params.items():
        at.query_params[k] = v
    return at.switch_page(links.path(view)).run()


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXAMPLES, ids=[ex.key for ex in EXAMPLES])
def test_an_example_link_opens_its_view_model_text_and_head(ex):
    at = _fresh(ex.query(), ex.view)
    assert not at.exception and not at.error, ex.key
    assert not [w.value for w in at.warning if "link parameters" in w.value], ex.key  # every parameter was used
    assert at.title[0].value == TITLES[ex.view]
    assert at.sidebar.selectbox(key="model").value == ex.sidebar.get("model", "bert")
    if "text" in ex.sidebar:
        assert at.sidebar.text_area(key="text").value == ex.sidebar["text"]
    if ex.head is not None:
        layer_key, head_key = HEAD_KEYS[ex.view]
        assert (at.selectbox(key=layer_key).value, at.selectbox(key=head_key).value) == ex.head


def test_the_examples_view_links_every_example():
    at = AppTest.from_file("../../app.py", default_timeout=120).run()
    at.switch_page("views/examples.py").run()
    assert not at.exception
    found = [p.proto.page for p in at.get("page_link")]
    assert found == [ex.view for ex in EXAMPLES]
    assert at.get("page_link")[0].proto.query_string == "model=bert&text=The+animal+didn%27t+cross+the+street+" \
        "because+it+was+too+tired.&heads_layer=L0&heads_head=H2"


def test_lesson_link_opens_its_step_and_walks_on():
    at = AppTest.from_file("../../app.py", default_timeout=240)
    at.query_params["lesson"] = "3"
    at.run()  # the link has no view: the step's view opens
    assert not at.exception and at.title[0].value == TITLES[LESSON[2].view]
    banner = at.markdown[0].value
    assert banner.startswith("**Lesson · step 3 of 10 · Positions**") and LESSON[2].question in banner
    at.button(key="lesson_next").click().run()
    assert at.title[0].value == TITLES[LESSON[3].view] and at.sidebar.button_group(key="lesson").value == 4
    assert at.text_input(key="bpe_text").value == LESSON[3].params["bpe_text"]
    at.button(key="lesson_prev").click().run()
    assert at.title[0].value == TITLES[LESSON[2].view] and "step 3 of 10" in at.markdown[0].value
    at.button(key="lesson_end").click().run()
    assert not at.exception and not any("Lesson ·" in m.value for m in at.markdown)


def test_every_step_opens_a_different_view_in_the_order_of_the_ideas():
    assert [s.view for s in LESSON] == ["inside_head", "heads", "positional", "bpe", "seq2seq", "graph", "kv_cache",
                                        "pruning", "next_token", "induction"]
    assert {s.view for s in LESSON} <= {v.stem for v in VIEWS}


def test_presenter_mode_restyles_and_fits_figures():
    at = _fresh({"presenter": "true"}, "heads")
    assert not at.exception and at.sidebar.toggle(key="presenter").value
    assert any("font-size: 20px" in h.proto.body for h in at.get("html"))
    figures = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert all(f["layout"]["height"] <= 520 and f["layout"]["font"]["size"] == 18 for f in figures)
    assert not at.get("download_button")  # no downloads on the projector
    at.sidebar.toggle(key="presenter").set_value(False).run()
    assert not any("font-size: 20px" in h.proto.body for h in at.get("html"))
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["height"] > 520
    assert at.get("download_button")


def test_a_lesson_step_sets_the_sidebar_without_streamlits_duplicate_default_warning(monkeypatch):
    """Streamlit logs 'created with a default value but also had its value set via the Session State API' when
    code sets a widget that also has a default; AppTest runs without a runtime, so the check is switched on."""
    from types import SimpleNamespace

    from streamlit.elements.lib import policies

    said = []
    monkeypatch.setattr(policies, "runtime", SimpleNamespace(exists=lambda: True))
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    monkeypatch.setattr(policies._LOGGER, "warning", lambda msg, *args, **kw: said.append(msg % args))
    at = AppTest.from_file("../../app.py", default_timeout=240)
    at.query_params["lesson"] = "7"
    at.run()
    at.button(key="lesson_next").click().run()  # step 8 puts the tiny decoder and "31415" in the sidebar
    assert not at.exception and "step 8 of 10" in at.markdown[0].value
    assert at.sidebar.text_area(key="text").value == "31415" and at.sidebar.selectbox(key="model").value == "tiny"
    assert not [s for s in said if "default value" in s], said
    at.sidebar.text_area(key="text").set_value("27182").run()  # and the box still takes what is typed
    assert at.sidebar.text_area(key="text").value == "27182"
