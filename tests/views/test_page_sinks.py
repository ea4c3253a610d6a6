"""AppTest of views/sinks.py through the app frame: sink mass of the three built-in GPT layouts, a short streaming
run with its figures, bad settings in one sentence, and the switch for a model that is not a causal decoder."""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from experiments import sinks as S

pytestmark = pytest.mark.usefixtures("one_thread")


def run(**state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=180)
    for key, value in {"model": "gpt", **state}.items():
        at.session_state[key] = value
    at.run()
    return at.switch_page("views/sinks.py").run()


@pytest.mark.slow
def test_sink_mass_of_the_three_layouts_and_a_short_stream():
    at = run(sink_tokens=48, sink_w=16, sink_s=2)
    assert not at.exception and not at.error, [e.value for e in at.error]
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    assert [t["hovertemplate"].split("<br>")[0] for t in heat] == ["gpt", "gpt-sink", "gpt-nobos"]
    table = at.dataframe[0].value
    assert list(table["model"]) == ["gpt", "gpt-sink", "gpt-nobos"]
    assert len(at.dataframe) == 1  # the models' table only: nothing streamed before the button
    at.button(key="sink_go").click().run()
    at.session_state["_work_jobs"]["sink_stream"].thread.join(180)
    at.run()
    assert not at.exception and not at.error
    stream = at.dataframe[1].value
    assert list(stream["cache"]) == ["full cache", "window of 16", "2 sinks + window of 16", "recompute last 16"]
    assert list(stream["peak positions"]) == [47, 16, 18, 16]
    assert len(at.get("plotly_chart")) == 4
    at.switch_page("views/home.py").run()
    at.switch_page("views/sinks.py").run()  # kept: shown again without a click
    assert at.dataframe[1].value["peak positions"].tolist() == [47, 16, 18, 16]


def test_the_heatmap_holds_the_models_own_sink_mass():
    import models

    at = run(sink_k=3)
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    expected = S.model_sink_mass(models.load("gpt-nobos"), 12, 3)["first"]
    z = heat[2]["z"]
    z = np.frombuffer(__import__("base64").b64decode(z["bdata"]), dtype=z["dtype"]).reshape(4, 4) \
        if isinstance(z, dict) else np.array(z)
    np.testing.assert_allclose(z, expected, atol=1e-6)
    top = np.unravel_index(np.argmax(expected), expected.shape)  # the conclusion names the measured strongest head
    caption = next(c.value for c in at.caption if c.value.startswith("Mass on position 0"))
    assert "gpt-nobos: " in caption and f"strongest L{top[0]} H{top[1]} {expected[top]:.2f}" in caption


def _masses(first, curve):
    first, curve = np.array(first, float), np.array(curve, float)
    return {"first": first, "per_position": np.broadcast_to(curve, first.shape + curve.shape),
            "uniform_first": 0.1}


def test_the_conclusion_is_computed_from_the_masses_both_ways():
    from ui.sinks import conclusion

    weak = conclusion({"a": _masses([[0.2, 0.3]], [np.nan, 0.5, 0.4, 0.2, 0.1])})
    assert weak.startswith("None of these models grows the paper's strong sinks")
    assert "a: no heads of 2 put at least half" in weak and "strongest L0 H1 0.30" in weak
    assert "later queries put less on it (0.500 early, 0.150 late)" in weak
    strong = conclusion({"a": _masses([[0.2, 0.3]], [np.nan, 0.1, 0.2]), "b": _masses([[0.9, 0.6]], [np.nan, 1, 1])})
    assert strong.startswith("b grows strong sinks like the paper's") and "b: 2 heads of 2" in strong
    assert "later queries put as much on it or more" in strong


def test_k_shows_with_the_first_k_tokens_and_changes_what_they_draw():
    at = run()
    assert not at.exception and "sink_k" not in [s.key for s in at.slider]  # position 0 alone: no k to set
    title = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    assert title.startswith("Attention on position 0")
    at.radio(key="sink_what").set_value("the first k tokens").run()
    at.slider(key="sink_k").set_value(2).run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["title"]["text"].startswith("Attention on the first 2 tokens, mean over query positions 2")
    assert at.selectbox(key="sink_model").label == "Model for the streaming experiment"  # not a second "Model"


@pytest.mark.parametrize("state, said", [
    ({"sink_w": 8, "sink_s": 9}, "Keep between 0 and W = 8 sink tokens"),
    ({"sink_text": "sidebar", "text": "def f(x): return x", "sink_w": 60}, "shorter than the window of 60"),
])
def test_bad_settings_get_one_sentence(state, said):
    at = run(**state)
    assert not at.exception
    assert len(at.error) == 1 and said in at.error[0].value and at.error[0].value.count(". ") == 0


def test_an_encoder_in_the_sidebar_gets_a_switch_and_the_builtins_still_show():
    at = run(model="bert")
    assert not at.exception and not at.error
    assert any("attends both ways" in i.value for i in at.info)
    at.button(key="sink_to_gpt").click().run()
    assert at.session_state["model"] == "gpt" and not at.error


def test_the_figures_and_the_reference_ids_are_made_once_per_server(monkeypatch):
    """The two sink-mass figures depend on kept measurements only and the held-out reference's ids on the model:
    a fresh link (a new session) and a rerun draw the kept figures and ids, each equal to a fresh build."""
    import torch

    import models
    from tests.views.kept_figures import charts, count_builds, counts, same_figure
    from ui import sinks as U
    from ui.runtime import cache
    from viz import sinks as V

    fresh = {"sink_heatmaps": V.sink_heatmaps, "per_position": V.per_position, "long_ids": S.long_ids}
    cache.STORES["results"].clear()
    built = count_builds(monkeypatch, V, "sink_heatmaps", "per_position")
    count_builds(monkeypatch, S, "long_ids", calls=built)
    first = run()
    assert not first.exception and not first.error and counts(built) == dict.fromkeys(built, 1)
    second = run()
    second.number_input(key="sink_w").set_value(32).run()  # a rerun: other settings of the stream, the same text
    assert not second.exception and not second.error and counts(built) == dict.fromkeys(built, 1)
    heat, curve = charts(second)[:2]
    (heat_args, _), = built["sink_heatmaps"]
    (curve_args, _), = built["per_position"]
    assert same_figure(heat, fresh["sink_heatmaps"](*heat_args))
    assert same_figure(curve, fresh["per_position"](*curve_args))
    assert not same_figure(heat, fresh["per_position"](*curve_args))
    ids = U.text_ids("gpt", "cpu", "float32", "reference", "", 512)
    assert torch.equal(ids, fresh["long_ids"](models.load("gpt"), 512)) and ids.shape == (1, 512)
    ids[0, 0] = -1  # each call gets its own tensor: the kept ids stay as they were
    assert U.text_ids("gpt", "cpu", "float32", "reference", "", 512)[0, 0] != -1 and counts(built)["long_ids"] == 1
