"""AppTest of the precision view: the tiny decoder measured end to end, MiniLM's fallback for a variant it lacks,
and the hosted cap on timed runs."""
import pytest
from streamlit.testing.v1 import AppTest

import limits


def _page(model: str, text: str, **state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["model"] = model
    at.session_state["text"] = text
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    at.switch_page("views/precision.py").run()
    assert not at.exception, at.exception
    return at


@pytest.mark.slow
def test_tiny_measured_end_to_end():
    at = _page("tiny", "31415", quant_variants=["fp16", "int8_dynamic", "int8_qat"])
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 3  # divergence grid, the biggest change, per tensor vs per channel
    assert at.radio(key="quant_head").options[0].startswith("L")
    at.slider(key="quant_items").set_value(30)
    at.slider(key="quant_runs").set_value(1)
    at.toggle(key="quant_measure").set_value(True).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    fp32 = table[table["variant"] == "fp32"].iloc[0]
    assert fp32["top-1 agreement"] == 1.0 and fp32["× fp32"] == 1.0
    int8 = table[table["variant"] == "int8 dynamic (per channel)"].iloc[0]
    assert int8["× fp32"] < 0.35 and int8["Exact match"] == 1.0 and int8["ms per forward"] > 0


def test_minilm_without_qat_weights_says_so_and_shows_fp32():
    at = _page("bert", "The bank of the river.", quant_variants=["int8_qat"])
    assert any("int8 QAT weights ship for tiny only" in w.value and "Showing fp32 instead." in w.value
               for w in at.warning)
    assert "0.000" in next(c.value for c in at.caption if "Largest single weight change" in c.value)


@pytest.mark.parametrize("hosted", [False, True])
def test_timed_runs_follow_the_hosting_cap(hosted, monkeypatch):
    if hosted:
        monkeypatch.setenv(limits.ENV, "1")
    else:
        monkeypatch.delenv(limits.ENV, raising=False)
    at = _page("tiny", "7", quant_variants=["int8_dynamic"])
    assert at.slider(key="quant_runs").max == limits.current().precision_runs
    assert at.slider(key="quant_items").max == limits.current().precision_items
