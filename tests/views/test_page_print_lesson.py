"""AppTest of the printable lesson: every step's question with its figure (the data its view draws on the same model
and text) or its table, then the teacher sheet with each step's answer, pick and minutes."""
import base64
import json

import numpy as np

import models
from classroom import answers
from tests.views.view_at import open_view
from ui.classroom.lesson import LESSON, TITLES


def _z(trace: dict) -> np.ndarray:
    """A heatmap's values from its JSON (plotly writes arrays as base64 with a dtype and a shape)."""
    z = trace["z"]
    if isinstance(z, dict):
        shape = tuple(int(s) for s in str(z["shape"]).split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
    return np.array(z, dtype=float)


def test_every_step_is_on_the_page_with_its_figure_and_the_sheet_has_every_answer():
    at = open_view("print_lesson")
    assert [h.value for h in at.header] == [f"{n}. {s.title} ({TITLES[s.view]})" for n, s in enumerate(LESSON, 1)] + [
        "Teacher sheet"]
    charts = {c.key: c for c in at.get("plotly_chart")}
    assert set(charts) == {f"print_fig_{n}" for n in (1, 2, 3, 5, 6, 9, 10)}
    assert all(json.loads(c.proto.config)["staticPlot"] for c in charts.values())  # still images
    tr = models.load("bert", "cpu", "float32").attend(answers.ANIMAL)
    head = _z(json.loads(charts["print_fig_1"].proto.spec)["data"][0])
    np.testing.assert_allclose(head, tr.weights[0, 2], atol=1e-4)  # L0 H2 on the step's model and text
    bpe, kv, pruning = (t.value for t in at.table)
    assert bpe.set_index("word").loc["unbelievably", "BPE pieces"] == 8
    assert list(kv["bytes per token (float32)"]) == [2 * 4 * h * 32 * 4 for h in (8, 2, 1)]
    exact = dict(zip(pruning["switched off"], pruning["exact match"]))
    assert exact["none"] == "100%" and int(exact["L0 H2"].rstrip("%")) < 10  # as the lesson's claims test finds
    sheet = " ".join(m.value for m in at.markdown)
    for n, step in enumerate(LESSON, 1):
        q = answers.question("attention", n)
        assert f"**{n}. {step.title}** · {step.notes.minutes} min" in sheet
        assert step.notes.answer in sheet and ", ".join(sorted(q.correct)) in sheet
    assert "45 minutes in all for 10 steps, leaving 5" in sheet
