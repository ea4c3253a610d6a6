"""AppTest of the precision view's two int8 paths and the device's dtypes: torchao's per-channel int8 and torch.ao's
dynamic int8 measured side by side (speed-up and agreement in the table and one sentence), and the line that says
what this CPU offers and why it refuses the rest."""
import pytest
from streamlit.testing.v1 import AppTest

from models import devices
from tests.views.view_at import open_view


def _page(model: str, text: str, **state) -> AppTest:
    return open_view("precision", model=model, text=text, **state)


@pytest.mark.slow
def test_both_int8_paths_side_by_side_with_speed_and_agreement():
    at = _page("tiny", "31415", quant_variants=["int8_dynamic", "int8_ao"])
    assert not at.error, [e.value for e in at.error]
    at.slider(key="quant_items").set_value(30)
    at.slider(key="quant_runs").set_value(1)
    at.toggle(key="quant_measure").set_value(True).run()
    assert not at.exception and not at.error, at.exception
    table = at.dataframe[0].value.set_index("variant")
    assert list(table.index) == ["fp32", "int8 dynamic (per channel)", "int8 torch.ao (fastest)"]
    assert table.loc["fp32", "speed-up"] == 1.0
    for row in ("int8 dynamic (per channel)", "int8 torch.ao (fastest)"):
        assert table.loc[row, "× fp32"] < 0.35 and table.loc[row, "top-1 agreement"] >= 0.95
        assert table.loc[row, "ms per forward"] > 0 and table.loc[row, "speed-up"] > 0
    pair = next(c.value for c in at.caption if c.value.startswith("Two int8 paths side by side."))
    assert "int8 torch.ao (fastest): " in pair and "int8 dynamic (per channel): " in pair


def test_the_page_says_which_dtypes_this_cpu_offers_and_why_not_the_rest():
    at = _page("tiny", "31415", quant_variants=["bf16"])
    line = next(c.value for c in at.caption if c.value.startswith("Torch reports this CPU's instructions"))
    found = devices.cpu_features()
    assert ", ".join(devices.dtypes_for("cpu", found)) in line
    for dtype in set(devices.DTYPE_NAMES) - set(devices.dtypes_for("cpu", found)):
        assert devices.cpu_refusal(dtype, found) in line
