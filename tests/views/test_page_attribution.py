"""AppTest: the attribution view explains MiniLM's similarity, a classifier's class and measures rows; bad input
gets one sentence (or switch buttons)."""
import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from experiments.explained import NO_PREDICTION, TOO_SHORT

TEXT, OTHER = "The river bank was muddy after the rain", "The shore was dirty"


def _app(**params) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    return at.switch_page("views/attribution.py").run()


def _figure(at, i: int) -> dict:
    return json.loads(at.get("plotly_chart")[i].proto.spec)


def _array(v) -> np.ndarray:
    """A figure's array as plotly writes it: a list, or a typed array {"dtype", "bdata", "shape"}."""
    if isinstance(v, dict):
        a = np.frombuffer(base64.b64decode(v["bdata"]), v["dtype"])
        return a.reshape([int(n) for n in str(v.get("shape", len(a))).split(",")])
    return np.asarray(v, float)


@pytest.mark.slow
def test_minilm_similarity_strips_and_rows_with_the_head_map():
    from experiments.attribution import attribute
    from models import load

    at = _app(text=TEXT, text_b=OTHER, attr_rows="5")
    assert not at.exception and not at.error
    assert at.markdown[0].value.startswith("**Explained:** the cosine similarity")
    strips = _figure(at, 0)["data"][0]
    assert len(strips["y"]) == 8  # every method, one strip each
    ig = attribute(load("bert"), TEXT, "integrated_gradients", text_b=OTHER)  # the library on its own
    row = strips["y"].index("integrated gradients")
    np.testing.assert_allclose(_array(strips["customdata"])[row], ig.scores, atol=1e-5)
    np.testing.assert_allclose(at.dataframe[0].value["integrated gradients"], ig.scores, atol=1e-4)  # its table
    assert any("completeness" in c.value and "(0.00% of the gap)" in c.value for c in at.caption)
    at.multiselect(key="attr_methods").set_value(["occlusion", "integrated_gradients", "random"]).run()
    at.button(key="attr_go").click().run()
    at.session_state["_work_jobs"]["attr_rows"].thread.join(300)
    at.run()
    assert not at.exception and not at.error
    assert any(c.value.startswith("5 rows measured") for c in at.caption)
    table, numbers = at.dataframe[-2].value, at.dataframe[-1].value  # the methods, then the head map's numbers
    assert list(table["method"]) == ["occlusion (leave one out)", "integrated gradients", "random"]
    heads = _figure(at, -1)
    assert numbers.shape == (6, 12) and list(numbers.index)[:2] == ["L0", "L1"]
    assert heads["layout"]["title"]["text"].startswith("Which heads agree")
    assert len(_array(heads["data"][0]["x"])) == 6 * 12


@pytest.mark.slow
def test_a_classifier_folder_explains_its_class(classifier):
    at = _app(model="hf:", text="the film was not good", attr_methods=["occlusion", "random"])
    at.sidebar.text_input(key="hf_spec").set_value(str(classifier[0])).run()
    assert not at.exception and not at.error
    assert at.markdown[0].value.startswith("**Explained:** the logit of class 'negative' (the model's prediction)")


def test_bad_input_one_sentence_each(tmp_path):
    at = _app(model="toy", text="the cat sat on the mat")
    assert not at.exception and at.info[0].value == NO_PREDICTION
    assert [b.key for b in at.button] == ["attr_to_bert", "attr_to_gpt"]
    at = _app(text="Hello")
    assert not at.exception and at.error[0].value == TOO_SHORT
    at = _app(text=TEXT, attr_steps="2")
    assert not at.exception and "4 to 512 steps" in at.error[0].value


def test_a_file_without_usable_rows_is_refused():
    from data.labelled import read_table
    from ui.attribution import MAX_ROWS, rows_of

    with pytest.raises(ValueError, match="No row of this file has a text in column 'text'"):
        rows_of(read_table(b"text,label\n,1\n ,0\n", "rows.csv", 1000), "text", None)
    table = read_table(("text,other\n" + "a b,c d\n" * (MAX_ROWS + 5)).encode(), "rows.csv", 10**6)
    assert rows_of(table, "text", "other")[:1] == [{"text": "a b", "text_b": "c d"}]
    assert len(rows_of(table, "text", None)) == MAX_ROWS
