"""Each lesson step opened as its link (?lesson=n): every mark of its notes is drawn, in red, on the figure the view
draws under that name (show.plot's file name), and frames the cells the question asks about without covering them:
a box half a cell outside them, the diagonal between two lines through its cells' corners."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from ui.classroom.lesson import LESSON

RED = "#e8114a"
MARKED = [n for n, step in enumerate(LESSON, 1) if step.notes.marks]


def _figures(at: AppTest) -> dict[str, dict]:
    """show.plot's name (the camera button's file name) -> the figure's spec."""
    found = {}
    for chart in at.get("plotly_chart"):
        name = json.loads(chart.proto.config or "{}").get("toImageButtonOptions", {}).get("filename")
        found[name] = json.loads(chart.proto.spec)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("n", MARKED)
def test_every_mark_is_on_the_figure_its_view_draws_and_leaves_the_asked_cells_visible(n):
    step = LESSON[n - 1]
    at = AppTest.from_file("../../app.py", default_timeout=300)
    for key, value in {**step.query(), "lesson": str(n)}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    for job in (at.session_state["_work_jobs"] if "_work_jobs" in at.session_state else {}).values():
        job.thread.join(300)  # a step's own job (step 10's circuit) ends here, not torn down mid-run at exit
    figures = _figures(at)
    for m in step.notes.marks:
        assert m.figure in figures, f"step {n}: no figure named {m.figure!r} on the page ({sorted(figures)})"
        red = [s for s in figures[m.figure]["layout"].get("shapes", []) if s.get("line", {}).get("color") == RED]
        if m.diagonal:
            lines = [s for s in red if s["type"] == "line" and s["xref"] == f"x{m.axes}"]
            assert len(lines) == 2 and all(abs(s["y1"] - s["x1"]) == 1 == abs(s["y0"] - s["x0"]) for s in lines)
        else:
            boxes = [s for s in red if s["type"] == "rect"]
            assert boxes, f"step {n}: no red box on {m.figure}"
            if m.head is None:  # a box of cells: half a cell outside them on every side
                assert any((b["x0"], b["x1"], b["y0"], b["y1"]) == (m.cols[0] - 1, m.cols[1] + 1, m.rows[0] - 1,
                                                                    m.rows[1] + 1) for b in boxes), step.title
