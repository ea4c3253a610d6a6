"""Presenter mode leaves no figure text under 16 px; a lesson step's teacher notes are folded under its question and
its mark is drawn on the figure the question points to, both gone in presenter mode."""
import json

import numpy as np
from streamlit.testing.v1 import AppTest

from ui.classroom import presenter


def _figures():
    from viz.efficient import pairs_vs_n, tile_map
    from viz.graph import matrices_figure
    from viz.inside_head import step_row
    from viz.sinks import per_position

    tokens = ["[CLS]", "the", "animal", "because", "[SEP]"]
    eye = np.eye(5) + 0.1
    steps = {"softmax": eye / eye.sum(1, keepdims=True), "A·V": np.ones((5, 8))}
    return {"inside head": step_row(("softmax", "A·V"), steps, tokens),
            "graph": matrices_figure([("raw", eye), ("rollout", eye), ("flow", eye)], tokens),
            "tiled": tile_map(np.ones((5, 5)), tokens, (0, 2), (0, 2), 0, True),
            "sparse": pairs_vs_n([64, 128], {"dense": [1, 2], "bigbird": [1, 2]},
                                 {"dense": "Dense", "bigbird": "BigBird"}),
            "sinks": per_position({"tiny": np.linspace(1, 0.01, 20)}, 1 / np.arange(1, 21), "first token")}


def test_presenter_fit_leaves_no_figure_text_under_16px():
    for name, fig in _figures().items():
        small = [f.size for f in presenter.fonts(fig) if f.size is not None and f.size < presenter.MIN_FONT]
        fitted = presenter.fit(fig)
        sizes = [f.size for f in presenter.fonts(fitted) if f.size is not None]
        assert all(s >= presenter.MIN_FONT for s in sizes), name
        assert fitted.layout.font.size == presenter.FONT_SIZE and fitted.layout.height <= presenter.FIGURE_HEIGHT
        if name in ("inside head", "graph"):
            assert small, f"{name}: the check saw no small font to raise"  # panel titles 14 px, colour bars 9 px


def _softmax_shapes(at: AppTest) -> list:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    row = next(s for s in specs if any("softmax" in a.get("text", "") for a in s["layout"].get("annotations", [])))
    return row["layout"].get("shapes", [])


def test_a_steps_notes_are_folded_and_its_mark_is_on_the_figure_not_in_presenter_mode():
    at = AppTest.from_file("../../../app.py", default_timeout=240)
    at.query_params["lesson"] = "1"
    at.run()
    assert not at.exception and at.title[0].value == "Inside one head"
    notes = [e for e in at.expander if e.label.startswith("Teacher notes")]
    assert len(notes) == 1 and "over 99%" in notes[0].markdown[0].value
    (box,) = _softmax_shapes(at)
    assert (box["x0"], box["x1"], box["y0"], box["y1"]) == (0, 2, 1, 3)  # around row 'animal', column 'the'
    at.sidebar.toggle(key="presenter").set_value(True).run()
    assert not [e for e in at.expander if e.label.startswith("Teacher notes")] and not _softmax_shapes(at)
