"""AppTest: links (query parameters) restore the view and follow it; bad ones become a notice; the compare page."""
from streamlit.testing.v1 import AppTest

LINK = {"text": "I sat on the river bank", "text_b": "It was muddy", "model": "bert", "device": "cpu",
        "layer": "3", "head": "7", "scale": "shared", "bertviz_on": "1", "bertviz_view": "Model view"}


def _app(params: dict) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_link_opens_that_view_and_the_url_follows_changes():
    at = _app(LINK)
    at.switch_page("views/heads.py").run()
    assert not at.exception and not at.warning
    assert at.sidebar.text_area(key="text").value == LINK["text"]
    assert at.sidebar.text_input(key="text_b").value == LINK["text_b"]
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (3, 7)
    assert at.radio(key="scale").value == "shared" and at.radio(key="bertviz_view").value == "Model view"
    page = at.get("iframe")[0].proto.srcdoc
    assert "model_view.js" in page and "cdnjs" not in page
    assert {k: at.query_params[k] for k in LINK} == LINK  # round trip
    at.selectbox(key="head").set_value(2).run()
    at.toggle(key="bertviz_on").set_value(False).run()
    assert at.query_params["head"] == "2" and at.query_params["bertviz_on"] == "0"


def test_malformed_and_unknown_parameters_are_ignored_with_a_notice():
    at = _app({"layer": "abc", "model": "nope", "zzz": "1", "text": "x" * 20_001, "head": "-1"})
    assert not at.exception
    notice = at.warning[0].value
    for part in ("'layer'", "'model'", "'zzz' (unknown)", "'text'", "'head'"):
        assert part in notice
    at.switch_page("views/heads.py").run()
    assert not at.exception and at.sidebar.selectbox(key="model").value == "bert"
    assert at.selectbox(key="layer").value == 0


def test_out_of_range_layer_is_left_out_with_a_notice():
    at = _app({"layer": "99", "head": "5"})
    at.switch_page("views/heads.py").run()
    assert not at.exception
    assert any("no layer 99" in i.value for i in at.info)
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (0, 5)


def test_compare_page_shows_bank_side_by_side_and_per_head():
    at = _app({"cmp_layer": "2"})
    at.switch_page("views/compare.py").run()
    assert not at.exception and not at.error
    chosen = at.multiselect(key="cmp_tokens")
    assert [chosen.options[i] for i in chosen.indices] == ["bank (A6 · B5)"]
    assert len(at.get("plotly_chart")) == 3 and at.selectbox(key="cmp_layer").value == 2
    chosen.set_value([0, 3]).run()  # [CLS] and bank: summed
    assert not at.exception and at.query_params["cmp_tokens"] == "0,3"
    at.text_input(key="cmp_b").set_value("Nothing alike here").run()
    assert not at.exception



def test_camera_button_saves_png_or_svg_named_after_the_view():
    import json

    at = _app({})
    at.switch_page("views/heads.py").run()
    options = json.loads(at.get("plotly_chart")[0].proto.config)["toImageButtonOptions"]
    assert options == {"format": "png", "scale": 3, "filename": "heads-overview"}
    at.sidebar.radio(key="image_format").set_value("svg").run()
    assert json.loads(at.get("plotly_chart")[0].proto.config)["toImageButtonOptions"]["format"] == "svg"
    assert [b.proto.label for b in at.get("download_button")] == ["Attention (.npz)", "Tidy table (.csv)",
                                                                  "Trace (.json)"]
