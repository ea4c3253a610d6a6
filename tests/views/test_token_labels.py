"""Token labels read as text in every view: a byte-level model's 'Ġ' (space) and 'Ċ' (newline) are drawn as
'␣' and '⏎' (analysis.tokens), while the trace and its exports keep the tokens as the tokenizer wrote them."""
import json

from streamlit.testing.v1 import AppTest

TEXT = "The bank of the river\nwas dirty"


def _figures(at: AppTest) -> str:
    return " ".join(json.dumps(json.loads(c.proto.spec), ensure_ascii=False) for c in at.get("plotly_chart"))


def test_gpt_tokens_are_labelled_as_they_read_in_every_figure():
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["text"], at.session_state["model"] = TEXT, "gpt"
    at.session_state["ih_model"] = "gpt"
    at.run()
    for view in ("heads", "graph", "inside_head"):
        at.switch_page(f"views/{view}.py").run()
        assert not at.exception and not at.error, view
        drawn = _figures(at)
        assert "␣the" in drawn and "⏎" in drawn, view
        assert "Ġ" not in drawn and "Ċ" not in drawn, view


def test_the_trace_and_its_exports_keep_the_tokens_as_written():
    from ui import export
    from ui.runtime import cache

    trace = cache.trace.uncached("gpt", "cpu", "float32", TEXT, None)
    assert "Ċ" in trace.tokens and any(t.startswith("Ġ") for t in trace.tokens)
    assert "Ġ" in export.to_csv(trace, 0, 0) and "␣" not in export.to_csv(trace, 0, 0)
