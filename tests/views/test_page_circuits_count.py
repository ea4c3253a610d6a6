"""AppTest: the Circuits view's pair count agrees with its Pairs box or says why not (issue: on a tiny Qwen2 the box
read 4 and the page "1 pair(s)", with the Patching view's pair, which is always one pair; then a disabled box read 4
beside "1 pair, not the 4 in the Pairs box"). With that task there is no box: the page says 1 pair. A tiny random
Qwen2 saved here; experiments.circuits_task.counted for the sentence."""
from streamlit.testing.v1 import AppTest

from bench.tiny_any import save
from experiments.circuits_task import CSV, PATCHING, counted
from tests.views.view_at import finished


def test_counted_says_why_fewer_pairs_than_asked():
    assert counted(PATCHING, 4, 4) == "4 pairs" and counted(PATCHING, 1, 1) == "1 pair"
    assert counted(CSV, 10, 3) == "3 pairs, not the 10 in the Pairs box: the file holds 3 rows of pairs"


def test_the_patching_pair_on_qwen2_is_one_pair_and_the_page_says_so(tmp_path):
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.query_params["circ_task"] = PATCHING
    at.query_params["circ_pairs"] = "4"
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = save("qwen2", "causal", tmp_path)
    at.run()
    at = finished(at.switch_page("views/circuits.py").run(), "circuits", 300)
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    assert not [b for b in at.number_input if b.key == "circ_pairs"]  # no box that could read another count
    said = " ".join(c.value for c in at.caption)
    assert "Pairs: **1**, the Patching view's pair" in said and "1 pair; the first:" in said
    assert "Pairs box" not in said and "pair(s)" not in said
    other = next(t for t in at.radio(key="circ_task").options if t != PATCHING)
    at = finished(at.radio(key="circ_task").set_value(other).run(), "circuits", 300)
    assert at.number_input(key="circ_pairs").value == 4 and not at.number_input(key="circ_pairs").disabled
