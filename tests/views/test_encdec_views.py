"""AppTest: a tiny random T5 or BART in the sidebar ('hf:<folder>') is the model the Seq2seq view's transformer tab
and the head finder show: the beams are its own, and the finder ranks the heads of its encoder or its decoder."""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import models
from analysis import patterns
from tests.views.test_page_finder import ranked
from viz.common import escape

TEXT = "The cat sat on the mat."


@pytest.fixture(autouse=True)
def short_outputs(monkeypatch):
    from models.hf import encdec

    monkeypatch.setattr(encdec, "MAX_NEW", 8)  # random weights rarely write </s>: keep their outputs short


def _app(folder: str, view: str, **state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["text"] = TEXT
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = folder
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(view).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _grid(at: AppTest) -> np.ndarray:
    """The finder's score grid as [L, H] (blank cells are drawn as 0)."""
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart"))["data"][0]
    colour, (x, y) = spec["marker"]["color"], (spec["x"], spec["y"])
    from tests.views.test_page_corpus import array

    colour, x, y = array(colour), array(x), array(y)
    grid = np.zeros((int(y.max()) + 1, int(x.max()) + 1))
    grid[y, x] = colour
    return grid


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_the_transformer_tab_decodes_with_the_sidebars_encoder_decoder(name, tiny_folder):
    folder = tiny_folder(name)
    at = _app(folder, "views/seq2seq.py", s2s_tab="Transformer and beam search", s2s_beam=2)
    own = models.load(f"hf:{folder}")
    date = at.text_input(key="s2s_date").value
    greedy, beams = own.hypotheses(date, 1)[0], own.hypotheses(date, 2)  # the model's own beam search, apart
    assert any("The sidebar's model is an encoder-decoder" in c.value for c in at.caption)
    assert any(c.value.startswith(f"{own.label}. Its cross-attention") for c in at.caption)
    table = at.dataframe[0].value
    assert list(table["output"]) == ["".join(h.output) for h in (greedy, *beams)]
    assert list(table["log-probability"]) == [round(h.score, 4) for h in (greedy, *beams)]  # greedy, then 2 beams
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    for h, after in ((greedy, ""), *((b, f" · log p = {b.score:.3f}") for b in beams)):  # each one that wrote
        text = "".join(h.output)  # its figure's title: what it wrote, cut at 60 characters with its count after
        assert not text or escape((text if len(text) <= 60 else f"{text[:57]}… ({len(h.output)} tokens)") + after) \
            in titles


def test_a_long_output_is_cut_in_its_figures_title():
    """An untrained model writes dozens of <pad>: the title keeps 57 characters and says how many tokens it cut."""
    from ui.seq2seq import _title

    assert _title(["<pad>"] * 63) == escape("<pad>" * 11 + "<p… (63 tokens)")
    assert _title(list("2021-03-03"), " · log p = -1.000") == "2021-03-03 · log p = -1.000"


def test_the_transformer_tab_names_the_built_in_when_the_sidebar_holds_no_encoder_decoder(monkeypatch):
    from ui.runtime import cache

    monkeypatch.undo()  # the trained built-in writes its whole date, as it does outside this file's shortened runs
    cache.STORES["results"].clear()  # a date an earlier test kept may have been cut at another length
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["s2s_tab"] = "Transformer and beam search"
    at.run()
    at.switch_page("views/seq2seq.py").run()
    assert not at.exception and not at.error
    assert any("not an encoder-decoder, so this is the built-in transformer date model" in c.value
               for c in at.caption)
    date = at.text_input(key="s2s_date").value
    greedy = models.load("seq2seq-transformer").hypotheses(date, 1)[0]  # the built-in's own answer, apart
    assert list(at.dataframe[0].value["output"])[0] == "".join(greedy.output)


def test_find_a_head_ranks_the_encoders_and_the_decoders_heads_of_t5(tiny_folder):
    folder = tiny_folder("t5")
    at = _app(folder, "views/finder.py", find_behaviour="broad")
    trace = models.load(f"hf:{folder}").attend(TEXT)  # the model's own attention, through the API
    assert not any("one cross-attention map" in i.value for i in at.info)
    radio = at.radio(key="find_part")
    assert radio.value == "encoder" and radio.options == ["Encoder self-attention", "Decoder masked self-attention"]
    for part in ("encoder", "decoder"):
        at.radio(key="find_part").set_value(part).run()
        assert not at.exception and not at.error
        stack = trace.parts[part]
        want = patterns.find_heads("broad", stack.weights, stack.tokens)
        np.testing.assert_allclose(_grid(at), np.nan_to_num(want), atol=1e-6)
        best = patterns.rank(want, 1)[0]
        first = ranked(at)[0]
        assert first[:2] == best[:2] and abs(first[2] - best[2]) < 1e-6
        assert any(s.value.startswith(f"Heads of the {part} ranked by") for s in at.header)  # which stack: said
    at.button(key="find_open_0").click().run()
    assert not at.exception and at.title[0].value == "Every head at a glance"
    assert at.radio(key="heads_part").value == "decoder"
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == best[:2]


def test_find_a_head_on_t5_counts_induction_in_the_picked_stack(tiny_folder):
    folder = tiny_folder("t5")
    at = _app(folder, "views/finder.py", find_behaviour="induction")
    twice = models.load(f"hf:{folder}").attend(f"{TEXT} {TEXT}").parts["encoder"]
    best = patterns.rank(patterns.find_heads("induction", twice.weights, twice.tokens), 1)[0]
    first = ranked(at)[0]
    assert first[:2] == best[:2] and abs(first[2] - best[2]) < 1e-6  # scored on the text written twice
