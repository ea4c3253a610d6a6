"""AppTest of views/induction.py through the app frame: the curves, a checkpoint's heads, the knock-outs, bad input,
and a head opened in Heads and in Inside a head with the induction model in the sidebar."""
import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import models
from data.induction import twice
from models import induction as mi
from viz.heads import overview


def app(**state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=180)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    return at.switch_page("views/induction.py").run()


def z_of(spec: dict) -> np.ndarray:
    """The first trace's z, decoded from plotly's typed-array form when it uses one."""
    z = spec["data"][0]["z"]
    if isinstance(z, dict):
        shape = [int(n) for n in str(z["shape"]).split(",")]
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape).astype(np.float64)
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=np.float64)


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def knock_outs(at: AppTest):
    """The knock-out table: a row per head knocked out (nothing, each layer-0 head, all of layer 0)."""
    return next(d.value for d in at.dataframe if "knocked out" in d.value.columns)


def test_the_view_shows_curves_heads_and_knock_outs():
    at = app()
    assert not at.exception and not at.error
    assert at.title[0].value == "Induction heads"
    curves, heads, bars = charts(at)
    steps = mi.steps()
    assert curves["data"][0]["x"] == steps and len(curves["data"]) == 3 + 2 * 8  # losses, then 8 heads twice
    assert any("phase change by step" in a["text"] for a in curves["layout"]["annotations"])
    assert "L1 · " in json.dumps(heads, ensure_ascii=False) and len(bars["data"]) == 2
    assert at.select_slider(key="ind_step").value == steps[-1]  # the last checkpoint first
    table = knock_outs(at)  # L1 H3 is the prefix matcher; a layer-0 head's knock-out hurts it far the most
    assert [c for c in table.columns if c.startswith("prefix matching")] == ["prefix matching of L1 H3"]
    drop = (table["prefix matching of L1 H3"][0] - table["prefix matching of L1 H3"])[1:-1]  # one L0 head each
    assert table["knocked out"][drop.idxmax()].startswith("L0 H") and drop.max() > 2 * drop.drop(drop.idxmax()).max()


def test_the_slider_picks_a_checkpoint_and_its_attention():
    at = app()
    at.select_slider(key="ind_step").set_value(0).run()
    assert not at.exception and at.select_slider(key="ind_step").value == 0
    shown = z_of(charts(at)[1])
    want = overview(models.load("induction", checkpoint=0).attend(twice(12)).weights, *[twice(12).split()] * 2)
    np.testing.assert_allclose(shown, z_of(json.loads(want.to_json())), atol=1e-6, equal_nan=True)
    last = overview(models.load("induction").attend(twice(12)).weights, *[twice(12).split()] * 2)
    assert np.nanmax(np.abs(shown - z_of(json.loads(last.to_json())))) > 10  # not the last checkpoint's


def test_bad_syllables_get_a_sentence():
    at = app(ind_text="the cat sat")
    assert not at.exception
    assert "'the' is not in the induction model's vocabulary" in at.error[0].value


@pytest.mark.parametrize("button, view, check", [
    ("ind_to_heads", "Every head at a glance", lambda at: at.selectbox(key="heads_layer").value == 1
     and at.selectbox(key="heads_head").value == 2),
    ("ind_to_inside", "Inside one head", lambda at: at.radio(key="ih_model").value == "induction"
     and at.selectbox(key="ih_ind_layer").value == 1 and at.selectbox(key="ih_ind_head").value == 2),
])
def test_a_head_opens_in_heads_and_inside_a_head_with_the_induction_model(button, view, check):
    at = app(ind_layer=1, ind_head=2)
    at.button(key=button).click().run()
    assert not at.exception and not at.error
    assert at.title[0].value == view and at.session_state["model"] == "induction"
    assert at.session_state["text"] == twice(12) and check(at)
    if view == "Inside one head":
        assert any("equals the model's own attention weights" in s.value for s in at.success)


def test_the_buttons_open_the_checkpoint_on_screen_not_the_last():
    at = app(ind_layer=1, ind_head=0, ind_step=1100)
    at.button(key="ind_to_heads").click().run()
    assert not at.exception and not at.error and at.session_state["model"] == "induction@1100"
    assert at.sidebar.selectbox(key="model").value == "induction@1100"
    want = models.load("induction", checkpoint=1100).attend(twice(12)).weights
    shown = overview(want, *[twice(12).split()] * 2)
    first = json.loads(at.get("plotly_chart")[0].proto.spec)  # the Heads overview
    np.testing.assert_allclose(z_of(first), z_of(json.loads(shown.to_json())), atol=1e-6, equal_nan=True)
    at = app(ind_layer=1, ind_head=0, ind_step=1100)
    at.button(key="ind_to_inside").click().run()
    assert not at.exception and not at.error and at.session_state["model"] == "induction@1100"
    assert any("equals the model's own attention weights" in s.value for s in at.success)
    with pytest.raises(ValueError, match="a step that ships"):
        models.load("induction@1101")


@pytest.mark.slow
def test_every_view_with_the_induction_model_shows_it_or_says_why():
    from bench.browser import views

    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["text"] = twice(12)
    at.session_state["model"] = "induction"
    at.run()
    for file, _, _ in views():
        at.switch_page(file).run()
        assert not at.exception, f"{file}: {at.exception[0].message[:300]}"
        assert at.title, f"{file} drew nothing"
        if file not in ("views/corpus.py", "views/compare.py"):  # their own English texts get the vocabulary's sentence
            assert not at.error, f"{file}: {[e.value for e in at.error]}"


def test_patching_the_induction_pair_restores_through_layer_1_and_the_view_opens_it():
    """At the last checkpoint, copying a layer-1 head's output from the clean run brings back most of the answer;
    layer 0 barely matters (the corrupted syllable reaches the answer only through what layer 1 copies)."""
    from data.induction import PATCH_PAIR
    from experiments.patching import patch_heads

    p = patch_heads(models.load("induction"), *PATCH_PAIR)
    assert p.clean_diff > 0 > p.corrupt_diff
    assert p.scores[1].max() > 0.5 and np.abs(p.scores[0]).max() < 0.15
    # the head that restores most is not layer 1's best prefix matcher (L1 H3): the view and README say so
    assert int(p.scores[1].argmax()) == 0 and p.scores[1, 0] > 2 * p.scores[1, 3]
    at = app()
    said = " ".join(m.value for m in at.markdown)
    assert "prefix matching of L1 H3" in knock_outs(at).columns and "need not be the best prefix" in said
    assert "induction head is" not in said
    at.button(key="ind_to_patching").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["model"] == "induction" and at.session_state["patch_answer"] == PATCH_PAIR[2]
    assert at.title[0].value.startswith("Patching")



def test_the_figures_are_built_once_per_server_and_show_the_same_numbers(monkeypatch):
    """The curves and knock-outs depend on shipped files only, the heads map on the syllables: a second session
    (a fresh link) and a rerun draw the kept figures, built once, each equal to a fresh build."""
    import viz.heads
    import viz.induction
    from experiments.induction import knock_out_evidence
    from tests.views.kept_figures import charts, count_builds, counts, same_figure
    from ui.runtime import cache

    fresh_curves, fresh_bars = viz.induction.curves, viz.induction.knock_out_bars
    cache.STORES["results"].clear()
    built = count_builds(monkeypatch, viz.induction, "curves", "knock_out_bars")
    count_builds(monkeypatch, viz.heads, "overview", calls=built)
    first = app()
    assert not first.exception and counts(built) == {"curves": 1, "knock_out_bars": 1, "overview": 1}
    second = app()
    second.select_slider(key="ind_step").set_value(mi.steps()[-1]).run()  # a rerun of the same page
    assert not second.exception and counts(built) == {"curves": 1, "knock_out_bars": 1, "overview": 1}
    assert charts(second) == charts(first)
    step = mi.steps()[-1]
    tr = models.load("induction", "cpu", "float32", checkpoint=step).attend(twice(12))
    curves, heads, bars = charts(second)
    assert same_figure(curves, fresh_curves(mi.scores(), step))
    assert same_figure(heads, overview(tr.weights, tr.tokens, tr.key_tokens))
    assert same_figure(bars, fresh_bars(knock_out_evidence(models.load("induction", checkpoint=step).net)[0]))
    second.text_input(key="ind_text").set_value("ba ke ba ke").run()                # other syllables: built for them
    assert not second.exception and counts(built)["overview"] == 2 and counts(built)["curves"] == 1
