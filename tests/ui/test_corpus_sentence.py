"""ui.corpus.head_on_sentence through ui.trace_text: a sentence the model cannot read gets the model's sentence."""
from streamlit.testing.v1 import AppTest


def page():
    from ui.corpus import head_on_sentence
    from ui.state import Selection

    sel = Selection(text="", text_b=None, model="tiny", device="cpu", dtype="float32")
    head_on_sentence(sel, "not digits", 0, 0, row=0)   # the tiny decoder only sorts digits
    head_on_sentence(sel, "31415", 0, 1, row=1, query=2)


def test_a_sentence_the_model_cannot_read_gets_its_sentence_and_a_good_one_its_figure():
    at = AppTest.from_function(page, default_timeout=120).run()
    assert not at.exception, at.exception
    assert len(at.error) == 1 and "only sorts digits" in at.error[0].value
    assert len(at.get("plotly_chart")) == 1 and at.button[0].label == "Open L0 H1 on this sentence in the Heads view"
