"""AppTest of the pruning page on the tiny decoder (sorting task) and on an encoder with an MLM head."""
from streamlit.testing.v1 import AppTest


def _page(model: str, text: str, **state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.session_state["model"] = model
    at.session_state["text"] = text
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    at.switch_page("views/pruning.py").run()
    assert not at.exception, at.exception
    return at


def _gap(at: AppTest) -> float:
    caption = next(c.value for c in at.caption if "Pruned vs gated" in c.value)
    return float(caption.split("difference ")[1].rstrip("."))


def test_pruning_page_on_tiny():
    at = _page("tiny", "31415")
    at.slider(key="prune_score").set_value(16)
    at.run()  # 50 held-out strings: under the cap of 64, the only reachable count (no slider)
    assert not at.exception, at.exception
    assert at.metric[0].label == "Exact match" and at.metric[0].value == "100.0%"
    said = " ".join(c.value for c in at.caption)
    off = at.multiselect(key="prune_off")
    assert off.value == [] and len(off.options) == 8 and "Held-out strings for the metric: 50." in said
    assert "Task: the sorting task. With every head: 100.0%. Chance: 0.1% (a random symbol at every answer" in said
    assert len(at.get("plotly_chart")) == 2  # importance grid and the gated attention of "31415"

    at.multiselect(key="prune_off").set_value(["L0 H2"]).run()  # the head the sorting needs most
    assert not at.exception, at.exception
    assert at.metric[0].delta.startswith("-") and at.metric[0].delta.endswith(" points vs all heads")
    assert float(at.metric[0].value.rstrip("%")) < 50

    at.toggle(key="prune_real").set_value(True).run()
    assert not at.exception, at.exception
    assert list(at.dataframe[0].value["batch"]) == [1, 16] and _gap(at) < 1e-5


def test_pruning_page_on_an_mlm_folder(tmp_path):
    from tests.models.test_hf_mlm_pruned import save_tiny_mlm

    save_tiny_mlm(tmp_path)
    at = _page("hf:", "The cat sat on the mat.", hf_spec=str(tmp_path))
    assert at.metric[0].label == "Masked-token accuracy"
    assert any("7 tokens of your text, each masked in turn" in c.value for c in at.caption)
    off = at.multiselect(key="prune_off")
    assert off.value == [] and len(off.options) == 8
    at.toggle(key="prune_real").set_value(True).run()
    assert not at.exception, at.exception
    assert _gap(at) < 1e-5
