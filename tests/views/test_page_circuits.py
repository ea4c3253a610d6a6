"""AppTest: the Circuits view on the built-in gpt and induction models, the induction path in its table, bad input."""
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import limits
import models
from tests.views.view_at import finished, open_linked


def _app(**params) -> AppTest:
    return open_linked("circuits", 300, **params)


def _done(at: AppTest) -> AppTest:
    return finished(at, "circuits", 300)


def _heads(m, text: str, seg: int = 10) -> tuple[int, int]:
    """The layer-0 head that most attends to the previous token, and the layer-1 head that most attends to the
    token after the earlier copy (as bench.circuits finds them, from attention, not from edges)."""
    w = m.attend(text).weights                                              # (L, H, T, T)
    T, half = w.shape[-1], seg // 2
    prev = int(np.argmax([np.diagonal(w[0, h], -1).mean() for h in range(w.shape[1])]))
    back = [(t, t - seg + 1) for t in range(T - half, T)]
    return prev, int(np.argmax([np.mean([w[1, h, q, k] for q, k in back]) for h in range(w.shape[1])]))


def test_induction_shows_the_circuit_with_the_previous_token_to_induction_key_edge():
    from data.circuit_tasks import repeats

    at = _done(_app(model="induction"))
    assert not at.exception and not at.error
    assert [h.value for h in at.header] == ["The circuit", "Faithfulness", "EAP against exact patching"]
    assert len(at.get("plotly_chart")) == 3 and len(at.title) == 1
    prev, ind = _heads(models.load("induction"), repeats(1)[0][0])
    table = at.dataframe[0].value
    assert list(table.columns) == ["sender", "receiver", "score"] and len(table) == 20
    assert (f"L0H{prev}", f"L1H{ind}.k") in set(zip(table.sender, table.receiver))
    assert "area under the curve" in at.markdown[0].value


def test_tiny_sorts_digits():
    at = _done(_app(model="tiny"))
    assert not at.exception and not at.error and len(at.get("plotly_chart")) == 3
    assert any("sorting digits" in c.value for c in at.caption)


def test_gpt_brackets_and_eap_ig():
    at = _done(_app(model="gpt", circ_pairs="2", circ_method="EAP-IG", circ_steps="2", circ_top="10"))
    assert not at.exception and not at.error and len(at.get("plotly_chart")) == 3
    assert len(at.dataframe[0].value) == 10 and "top **10** edges" in at.markdown[0].value


def _csv(at: AppTest, text: str) -> None:
    from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec

    rec = UploadedFileRec(file_id="f", name="pairs.csv", type="text/csv", data=text.encode())
    at.session_state["circ_csv"] = UploadedFile(rec, None)


@pytest.mark.parametrize(("csv", "said"), [
    (None, "Upload a CSV file"),
    ("", "not a CSV of pairs"),
    ("clean,corrupt,answer,wrong\n", "no pairs under its header"),
    ("a,b,c\n1,2,3\n", "The CSV's columns are a, b, c"),
    ("clean,corrupt,answer,wrong\nba ke mi ba,ba ke mi ba ke,ke,mi\n", "must line up token by token"),
])
def test_bad_csv_gets_one_sentence(csv, said):
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.query_params["model"] = "induction"
    at.query_params["circ_task"] = "Pairs from a CSV file"
    at.run()
    if csv is not None:
        _csv(at, csv)
    at.switch_page("views/circuits.py").run()
    assert not at.exception
    assert len(at.error) == 1 and said in at.error[0].value, [e.value for e in at.error]
    assert not at.get("plotly_chart")


def test_a_model_circuits_refuse_gets_a_switch_and_hosted_mode_bounds_the_work(monkeypatch):
    at = _app(model="bert")
    assert not at.exception and "decoder-only" in at.info[0].value
    at.button(key="circ_to_gpt").click().run()
    assert at.sidebar.selectbox(key="model").value == "gpt"
    monkeypatch.setenv(limits.ENV, "1")
    at = _app(model="gpt", circ_pairs="64", circ_method="EAP-IG", circ_steps="100")
    assert not at.exception and "over the" in at.error[0].value and not at.get("plotly_chart")


def test_a_head_of_the_circuit_opens_in_inside_a_head_on_the_first_clean_text():
    from data.circuit_tasks import repeats

    at = _done(_app(model="induction"))
    at.selectbox(key="circ_head").set_value("L1H3").run()
    at.button(key="circ_open").click().run()
    assert not at.exception and at.title[0].value == "Inside one head"
    assert (at.selectbox(key="ih_ind_layer").value, at.selectbox(key="ih_ind_head").value) == (1, 3)
    assert at.sidebar.text_area(key="text").value == repeats(1)[0][0]
