"""AppTest: the Patching view on the built-in gpt and tiny decoder, its example pair, bad input, and click-through."""
import numpy as np
from streamlit.testing.v1 import AppTest

import models
from experiments.patching import patch_heads
from ui.patching import PAIRS


def _app(**params) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    return at.switch_page("views/patching.py").run()


def _done(at: AppTest) -> AppTest:
    jobs = at.session_state["_work_jobs"] if "_work_jobs" in at.session_state else {}
    if "patching" in jobs:
        jobs["patching"].thread.join(180)
    return at.run()


def test_the_example_pair_on_gpt_shows_both_maps_and_the_model_prefers_the_answer():
    at = _done(_app(model="gpt"))
    assert not at.exception and not at.error
    pair = PAIRS["gpt"]
    assert at.text_input(key="patch_clean").value == pair.clean
    p = patch_heads(models.load("gpt"), pair.clean, pair.corrupt, pair.answer, pair.wrong)
    assert p.clean_diff > 1 and p.corrupt_diff < -1  # the default pair works on the shipped weights
    assert f"clean **{p.clean_diff:+.2f}**, corrupted **{p.corrupt_diff:+.2f}**" in at.markdown[0].value
    best = np.unravel_index(np.nanargmax(p.scores), p.scores.shape)
    assert any(f"{p.rows[best[0]]}, head {best[1]}" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 3  # heads, positions, and against gradient importance


def test_bad_input_gets_one_sentence():
    at = _done(_app(model="gpt", patch_corrupt="def area(the_path): return the_path *"))
    assert not at.exception and "must line up token by token" in at.error[0].value
    at.text_input(key="patch_corrupt").set_value(PAIRS["gpt"].corrupt).run()
    at.text_input(key="patch_answer").set_value(" namespace_thing").run()
    assert not at.exception and "give one token" in _done(at).error[0].value


def test_tiny_decoder_pair_and_a_model_that_predicts_nothing_gets_a_switch():
    at = _done(_app(model="tiny"))
    assert not at.exception and not at.error and at.text_input(key="patch_clean").value == PAIRS["tiny"].clean
    at = _app(model="bert")
    assert not at.exception and "predicts no token or class" in at.info[0].value
    at.button(key="patch_to_gpt").click().run()
    assert at.sidebar.selectbox(key="model").value == "gpt"


def test_the_most_restoring_head_opens_inside_a_head_on_the_clean_text():
    at = _done(_app(model="gpt"))
    pair = PAIRS["gpt"]
    p = patch_heads(models.load("gpt"), pair.clean, pair.corrupt, pair.answer, pair.wrong)
    layer, head = np.unravel_index(np.nanargmax(p.scores), p.scores.shape)
    at.button(key="patch_open_best").click().run()
    assert not at.exception and at.title[0].value == "Inside one head"
    assert (at.selectbox(key="ih_bert_layer").value, at.selectbox(key="ih_bert_head").value) == (layer, head)
    assert at.sidebar.text_area(key="text").value == PAIRS["gpt"].clean
