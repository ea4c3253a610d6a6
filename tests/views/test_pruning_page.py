"""AppTest of the pruning page with small settings: scoring, toggling heads, curve, real pruning."""
from streamlit.testing.v1 import AppTest


def test_pruning_page_small():
    at = AppTest.from_file("../../app.py", default_timeout=120)
    at.run()
    at.switch_page("views/pruning.py").run()
    assert not at.exception, at.exception
    at.slider(key="prune_score").set_value(8)
    at.slider(key="prune_eval").set_value(10).run()
    assert not at.exception, at.exception
    full = at.metric[0].value
    assert full.endswith("%") and at.metric[0].label == "Retrieval accuracy"
    assert len(at.get("plotly_chart")) == 2  # importance grid and the gated attention overview
    assert any(c.value.startswith("Patterns over 24 built-in sentences") for c in at.caption)

    at.multiselect(key="prune_off").set_value([f"L{l} H{h}" for l in range(6) for h in range(12)]).run()
    assert not at.exception, at.exception
    assert "72 of 72 heads off" in " ".join(c.value for c in at.caption)
    assert "vs all heads" in at.metric[0].delta

    at.multiselect(key="prune_off").set_value(["L0 H0"]).run()
    at.slider(key="prune_seeds").set_value(2)
    at.toggle(key="prune_curve").set_value(True).run()
    assert not at.exception, at.exception
    assert any("At 40 % removed" in c.value for c in at.caption)

    at.toggle(key="prune_real").set_value(True).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert list(table["batch"]) == [1, 16] and (table["pruned (ms)"] > 0).all()
    gap = next(c.value for c in at.caption if "Pruned vs gated" in c.value)
    assert float(gap.split("difference ")[1].rstrip(".")) < 1e-5
