"""AppTest: the lesson's induction step (?lesson=10, the Induction view) runs the circuit job once, then draws the
circuit graph (with its screen-reader sentence) and the sentence the claim test checks
(tests/ui/classroom/test_lesson_circuit.py) from the server's kept result; the Induction view without the lesson draws
neither."""
import json

from streamlit.testing.v1 import AppTest

import models
from data.circuit_tasks import repeats
from tests.views.view_at import finished, open_view
from ui.classroom import lesson_circuit as lc
from ui.classroom.lesson import LESSON
from viz.circuits import STUBS

STEP = next(n for n, s in enumerate(LESSON, 1) if s.view == "induction")


def _figures(at) -> dict[str, dict]:
    """show.plot's name -> (its spec, its alt text)."""
    found = {}
    for chart in at.get("plotly_chart"):
        name = json.loads(chart.proto.config or "{}").get("toImageButtonOptions", {}).get("filename")
        found[name] = (json.loads(chart.proto.spec), chart.proto.alt)
    return found


def test_the_induction_step_draws_the_circuit_and_says_its_path():
    at = AppTest.from_file("../../app.py", default_timeout=300)
    for key, value in {**LESSON[STEP - 1].query(), "lesson": str(STEP)}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Induction heads"
    at = finished(at, lc.JOB)
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert any(h.value == "Ground truth: the circuit behind the induction head" for h in at.header)
    figures = _figures(at)
    assert "lesson-circuit" in figures, sorted(figures)
    spec, alt = figures["lesson-circuit"]
    lines = [t for t in spec["data"] if t.get("mode") == "lines" and t.get("name") != STUBS]  # edges, not stubs
    assert len(lines) == lc.TOP  # one line per edge of the circuit
    want = lc.sentence(lc.find(models.load("induction"), repeats(lc.PAIRS)))  # recomputed here, not the kept one
    assert any(m.value == want for m in at.markdown), want
    assert want.replace("**", "") in alt and alt.startswith("The induction model's circuit as a layered graph")
    path = want.split("**")[1]  # 'L0H2 → L1H3.k': the figure names its edges (where a hover shows them)
    assert path in json.dumps(spec["data"], ensure_ascii=False), path
    at.button(key="lesson_circuit_open").click().run()
    assert not at.exception and at.title[0].value == "Circuits"
    assert at.sidebar.selectbox(key="model").value == "induction" and at.radio(key="circ_task").value == "Built-in task"
    assert at.number_input(key="circ_pairs").value == lc.PAIRS and at.number_input(key="circ_top").value == lc.TOP
    assert not finished(at, "circuits").exception  # its own job, waited for (no thread left running at exit)


def test_the_induction_view_without_the_lesson_has_no_circuit():
    at = open_view("induction")
    assert "lesson-circuit" not in _figures(at)
    assert not any(h.value.startswith("Ground truth") for h in at.header)
