"""AppTest: links (query parameters) restore the view and follow it; bad ones become a notice; the compare page."""
from streamlit.testing.v1 import AppTest

LINK = {"text": "I sat on the river bank", "text_b": "It was muddy", "model": "bert", "device": "cpu",
        "heads_layer": "L3", "heads_head": "H7", "heads_scale": "shared", "heads_bertviz": "true",
        "heads_bertviz_view": "Model view"}


def _app(params: dict) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_link_opens_that_view_with_every_choice():
    at = _app(LINK)
    at.switch_page("views/heads.py").run()
    assert not at.exception and not at.warning
    assert at.sidebar.text_area(key="text").value == LINK["text"]
    assert at.sidebar.text_input(key="text_b").value == LINK["text_b"]
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (3, 7)
    assert at.radio(key="heads_scale").value == "shared" and at.radio(key="heads_bertviz_view").value == "Model view"
    page = at.get("iframe")[0].proto.srcdoc
    assert "model_view.js" in page and "cdnjs" not in page


def test_a_view_keeps_its_choices_across_navigation():
    at = _app({})
    at.switch_page("views/heads.py").run()
    at.selectbox(key="heads_layer").set_value(4).run()
    at.radio(key="heads_scale").set_value("shared").run()
    at.switch_page("views/graph.py").run()
    at.radio(key="graph_view").set_value("All layers").run()
    at.switch_page("views/heads.py").run()
    assert at.selectbox(key="heads_layer").value == 4 and at.radio(key="heads_scale").value == "shared"
    at.switch_page("views/graph.py").run()
    assert at.radio(key="graph_view").value == "All layers"


def test_malformed_and_unknown_parameters_are_named_in_one_notice():
    at = _app({"heads_layer": "abc", "model": "nope", "zzz": "1", "text": "x" * 20_001, "heads_head": "-1"})
    notice = " ".join(w.value for w in at.warning)
    for part in ("'model' ('nope' is not a choice here)", "'zzz' (unknown)", "'text' (cut to 20,000 characters)"):
        assert part in notice, notice
    assert at.sidebar.selectbox(key="model").value == "bert"
    assert len(at.sidebar.text_area(key="text").value) == 20_000
    at.switch_page("views/heads.py").run()
    assert not at.exception and at.selectbox(key="heads_layer").value == 0


def test_a_layer_this_model_does_not_have_falls_back_with_a_notice():
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.query_params["heads_layer"] = "L99"
    at.query_params["heads_head"] = "H5"
    at.switch_page("views/heads.py").run()
    assert not at.exception
    assert any("'heads_layer' ('L99' is not a choice here)" in w.value for w in at.warning)
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (0, 5)


def test_a_default_value_in_a_link_is_not_reported():
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.query_params["heads_layer"] = "L0"
    at.query_params["heads_hide"] = "false"
    at.switch_page("views/heads.py").run()
    assert not at.exception and not at.warning


def test_compare_page_shows_bank_side_by_side_and_per_head():
    at = _app({"cmp_layer": "L2"})
    at.switch_page("views/compare.py").run()
    assert not at.exception and not at.error
    chosen = at.multiselect(key="cmp_tokens")
    assert [chosen.options[i] for i in chosen.indices] == ["bank (A6 · B5)"]
    assert len(at.get("plotly_chart")) == 3 and at.selectbox(key="cmp_layer").value == 2
    chosen.set_value(["[CLS]", "bank"]).run()  # summed
    assert not at.exception
    at.text_input(key="cmp_b").set_value("Nothing alike here").run()
    assert not at.exception



def test_compare_aligns_words_not_pieces_for_a_byte_level_model():
    import json

    at = _app({"model": "gpt"})
    at.switch_page("views/compare.py").run()
    assert not at.exception and not at.error
    chosen = at.multiselect(key="cmp_tokens")
    assert chosen.value == ["bank"]  # the word, though the tokenizer cut it into pieces
    assert not {"k", "an", "Ġb", "␣b"} & {o.split(" (")[0] for o in chosen.options}
    keys = json.loads(at.get("plotly_chart")[2].proto.spec)["data"][0]["hovertext"]
    assert "bank" in keys and "k" not in keys  # B − A over shared words: its 3 pieces (␣b an k) as one

    import json

    at = _app({})
    at.switch_page("views/heads.py").run()
    options = json.loads(at.get("plotly_chart")[0].proto.config)["toImageButtonOptions"]
    assert options == {"format": "png", "scale": 3, "filename": "heads-overview"}
    at.sidebar.radio(key="image_format").set_value("svg").run()
    assert json.loads(at.get("plotly_chart")[0].proto.config)["toImageButtonOptions"]["format"] == "svg"
    labels = [b.proto.label for b in at.get("download_button")]  # what is shown, each with its size before the click
    assert [label.split(" (")[0] for label in labels] == ["L0 H0 as a table", "L0 H0", "Layer L0, all heads",
                                                          "Every layer"]
    assert all("KiB)" in label or "MiB)" in label for label in labels)
