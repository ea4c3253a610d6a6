"""AppTest: the head finder ranks heads of the sidebar's model and opens the one picked in the Heads view."""
import json

from streamlit.testing.v1 import AppTest


def _app(**params) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    return at.switch_page("views/finder.py").run()


def ranked(at: AppTest) -> list[tuple[int, int, float]]:
    """(layer, head, score) of the heads the finder's grid numbers 1, 2, ..., in that order: read from the figure
    (each square's rank is its text, its score its colour), not from the sentences beside it."""
    from tests.views.test_page_corpus import array

    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart"))["data"][0]
    x, y, colour = array(spec["x"]), array(spec["y"]), array(spec["marker"]["color"])
    numbered = sorted((int(t), i) for i, t in enumerate(spec["text"]) if t)
    return [(int(y[i]), int(x[i]), float(colour[i])) for _, i in numbered]


def test_previous_token_head_first_and_open_in_heads():
    at = _app()
    assert not at.exception and not at.error
    (layer, head, score), *_ = ranked(at)
    assert (layer, head) == (0, 2) and round(score, 2) == 1.00
    at.button(key="find_open_0").click().run()
    assert not at.exception and at.title[0].value == "Every head at a glance"
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (0, 2)
    assert at.query_params == {"heads_head": "H2"}  # L0 is the default: not written


def test_coreference_from_a_link_and_a_text_without_pronoun():
    at = _app(find_behaviour="coreference")
    assert at.selectbox(key="find_pronoun").value is not None
    assert [lh[:2] for lh in ranked(at)[:2]] == [(3, 1), (5, 11)]
    at.sidebar.text_area(key="text").set_value("Dogs bark at night.").run()
    assert not at.exception and "needs a pronoun" in at.info[0].value
    at.sidebar.text_area(key="text").set_value("Dogs bark.").run()
    at.selectbox(key="find_behaviour").set_value("same token").run()
    assert "No token occurs twice" in at.info[0].value


def test_a_cross_attention_model_gets_a_switch():
    at = _app(model="seq2seq-bahdanau", text="3 march 2021")
    assert not at.exception and "self-attention" in at.info[0].value
    assert [b.key for b in at.button] == ["find_to_bert", "find_to_gpt"]  # the switch every view offers
    at.button(key="find_to_bert").click().run()
    assert at.sidebar.selectbox(key="model").value == "bert" and not at.exception


def test_induction_heads_of_the_built_in_gpt_on_the_text_written_twice():
    import numpy as np

    import models
    from analysis import patterns

    text = "The if statement selects one suite by evaluating the expressions one by one."
    at = _app(model="gpt", text=text, find_behaviour="induction")
    assert not at.exception and not at.error
    tr = models.load("gpt").attend(f"{text} {text}")  # the model's own attention on the doubled text
    best = patterns.rank(patterns.induction(tr.weights, tr.tokens), 1)[0]
    first = ranked(at)[0]
    assert first[:2] == best[:2] and abs(first[2] - best[2]) < 1e-6
    assert any("written twice" in c.value for c in at.caption)
    assert np.isfinite(best[2]) and best[2] > 2 / len(tr.tokens)  # well above an even spread over the keys


def test_cls_and_sep_are_offered_only_for_the_special_tokens_the_model_has():
    at = _app()  # BERT: [CLS] and [SEP]
    assert {"[CLS]", "[SEP]"} <= set(at.selectbox(key="find_behaviour").options)
    at = _app(model="gpt", text="The if statement selects one suite.")  # a start token <s>, no end token
    box = at.selectbox(key="find_behaviour")
    assert "start token <s>" in box.options and "[SEP]" not in box.options and "[CLS]" not in box.options
    assert any(c.value.startswith("Not offered: [SEP].") for c in at.caption)
    box.set_value("[CLS]").run()
    assert not at.exception and at.get("plotly_chart") and "start token <s>" in at.header[0].value
    at = _app(model="toy", text="The cat sat on the mat.")  # no special token at all
    assert not {"[CLS]", "[SEP]"} & set(at.selectbox(key="find_behaviour").options)
    assert any(c.value.startswith("Not offered: [CLS] and [SEP].") for c in at.caption)
