"""AppTest: the Patching view on the built-in gpt and tiny decoder, its example pair, bad input, and click-through."""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import models
from experiments.patching import patch_heads
from tests.views.test_page_corpus import array
from tests.views.view_at import finished, open_linked
from ui.patching import PAIRS


def _app(**params) -> AppTest:
    return open_linked("patching", 180, **params)


def _done(at: AppTest) -> AppTest:
    return finished(at, "patching", 180)


def test_the_example_pair_on_gpt_shows_both_maps_and_the_model_prefers_the_answer():
    at = _done(_app(model="gpt"))
    assert not at.exception and not at.error
    pair = PAIRS["gpt"]
    assert at.text_input(key="patch_clean").value == pair.clean
    p = patch_heads(models.load("gpt"), pair.clean, pair.corrupt, pair.answer, pair.wrong)
    assert p.clean_diff > 1 and p.corrupt_diff < -1  # the default pair works on the shipped weights
    assert f"clean **{p.clean_diff:+.2f}**, corrupted **{p.corrupt_diff:+.2f}**" in at.markdown[0].value
    heads = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key.startswith("patch_heads"))
    squares = heads["data"][0]  # a square per head: x its head, y its row, colour its score
    shown = np.full(p.scores.shape, np.nan)
    shown[array(squares["y"]), array(squares["x"])] = array(squares["marker"]["color"])
    np.testing.assert_allclose(shown, p.scores, atol=1e-6, equal_nan=True)  # the map is the model's own scores
    assert heads["layout"]["yaxis"]["ticktext"] == [f"L{layer}" for layer in range(p.scores.shape[0])]  # as Heads
    assert len(at.get("plotly_chart")) == 3  # heads, positions, and against gradient importance


def test_the_example_button_is_off_while_the_boxes_hold_the_example_and_puts_it_back():
    """It did nothing when the boxes already held the example (a model no example fits kept saying so)."""
    at = _done(_app(model="tiny"))
    assert at.button(key="patch_example").disabled
    at.text_input(key="patch_clean").set_value("31425")
    at = _done(at.run())
    assert not at.button(key="patch_example").disabled
    at = _done(at.button(key="patch_example").click().run())
    assert at.text_input(key="patch_clean").value == PAIRS["tiny"].clean and at.button(key="patch_example").disabled


def test_bad_input_gets_one_sentence():
    at = _done(_app(model="gpt", patch_corrupt="def area(the_path): return the_path *"))
    assert not at.exception and "must line up token by token" in at.error[0].value
    assert not at.get("progress")  # the refusal leaves no "Patching…" bar above it
    at.text_input(key="patch_corrupt").set_value(PAIRS["gpt"].corrupt).run()
    at.text_input(key="patch_answer").set_value(" namespace_thing").run()
    assert not at.exception and "give one token" in _done(at).error[0].value


def test_tiny_decoder_pair_and_a_model_that_predicts_nothing_gets_a_switch():
    at = _done(_app(model="tiny"))
    assert not at.exception and not at.error and at.text_input(key="patch_clean").value == PAIRS["tiny"].clean
    at = _app(model="bert")
    assert not at.exception and "loaded without a head" in at.info[0].value
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


def _accepted() -> list[str]:
    from experiments.patching import check

    keys = []
    for key in models.available():
        try:
            check(models.load(key))
        except ValueError:
            continue
        keys.append(key)
    return keys


def test_every_built_in_model_patching_accepts_has_an_example_pair_it_answers():
    from ui.patching import pair_for

    accepted = _accepted()
    assert {"gpt", "tiny", "induction", "seq2seq-transformer"} <= set(accepted)
    for key in accepted:  # the pair fits the tokenizer and the shipped weights prefer its answer on the clean text
        pair = pair_for(key, models.load(key))
        p = patch_heads(models.load(key), pair.clean, pair.corrupt, pair.answer, pair.wrong)
        assert p.clean_diff > 1 and p.corrupt_diff < -1, key


@pytest.mark.slow
@pytest.mark.parametrize("key", ["gpt", "tiny", "induction", "seq2seq-transformer"])
def test_the_view_opens_on_each_built_in_models_example_without_a_notice(key):
    at = _done(_app(model=key))
    assert not at.exception and not at.error and not at.info, key
    assert "clean **+" in at.markdown[0].value and len(at.get("plotly_chart")) == 3


def test_switching_model_gives_the_boxes_the_new_models_example_but_keeps_a_typed_pair():
    from ui.patching import PAIRS

    at = _done(_app(model="gpt"))
    at.sidebar.selectbox(key="model").set_value("seq2seq-transformer")
    at = _done(at.run())
    assert not at.exception and not at.info and at.text_input(key="patch_clean").value == PAIRS[
        "seq2seq-transformer"].clean
    at.text_input(key="patch_corrupt").set_value("Wednesday, the 3rd of March 1821").run()
    at.sidebar.selectbox(key="model").set_value("gpt")
    at = _done(at.run())  # a pair of one's own is not replaced
    assert not at.exception and at.text_input(key="patch_corrupt").value == "Wednesday, the 3rd of March 1821"
    assert at.text_input(key="patch_clean").value == PAIRS["seq2seq-transformer"].clean


def test_a_hugging_face_model_gets_the_first_example_that_fits_its_tokenizer(tiny_folder):
    from experiments.patching import lined_up
    from ui.patching import IOI, IOI_LETTERS, pair_for

    for family in ("gpt2", "llama", "t5"):  # one character per token: ' Mary' is five, so IOI does not fit
        model = models.load("hf:" + tiny_folder(family))
        with pytest.raises(ValueError, match=r"is 5 tokens here \(' ', 'M', 'a', 'r', 'y'\): give one token, e.g. 'M'"):
            lined_up(model, IOI.clean, IOI.corrupt, IOI.answer, IOI.wrong)
        assert pair_for("hf:" + tiny_folder(family), model) == IOI_LETTERS, family
        p = patch_heads(model, IOI_LETTERS.clean, IOI_LETTERS.corrupt, IOI_LETTERS.answer, IOI_LETTERS.wrong)
        assert np.isfinite(p.scores).all() and p.clean_diff != p.corrupt_diff


def test_the_boxes_follow_a_new_pairs_most_restoring_head_and_keep_a_pick_while_it_stays():
    """They stayed on the first pair's best head after another pair was typed, under 'Most restoring head: L0 H1'."""
    def best(at) -> tuple[int, int]:
        said = next(c.value for c in at.caption if c.value.startswith("Most restoring head: "))
        layer, head = said.removeprefix("Most restoring head: ").split(" (")[0].split()
        return int(layer[1:]), int(head[1:])

    def boxes(at) -> tuple[int, int]:
        return at.selectbox(key="patch_pick_layer").value, at.selectbox(key="patch_pick_head").value

    at = _done(_app(model="gpt"))
    first = best(at)
    assert boxes(at) == first
    at.selectbox(key="patch_pick_head").set_value((first[1] + 1) % 4).run()
    assert boxes(at) == (first[0], (first[1] + 1) % 4)                     # the visitor's pick stays
    seen = {first}
    for clean, corrupt, answer, wrong in (("def f(x): return x +", "def f(y): return y +", " x", " y"),
                                          ("def area(size): return size *", "def area(data): return data *", " size",
                                           " data")):
        for key, value in zip(("patch_clean", "patch_corrupt", "patch_answer", "patch_wrong"),
                              (clean, corrupt, answer, wrong)):
            at.text_input(key=key).set_value(value)
        at = _done(at.run())
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert boxes(at) == best(at)                                        # on the new pair's best head
        seen.add(best(at))
    assert len(seen) > 1  # the pairs' best heads differ, so the boxes moved


def test_any_head_opens_from_the_boxes_beside_the_map_without_a_mouse():
    at = _done(_app(model="gpt"))
    assert at.selectbox(key="patch_pick_layer").value is not None  # starts on the most restoring head
    at.selectbox(key="patch_pick_layer").set_value(1).run()
    at.selectbox(key="patch_pick_head").set_value(2).run()
    assert "H2 in Inside a head" in at.button(key="patch_open_best").label
    at.button(key="patch_open_best").click().run()
    assert not at.exception and at.title[0].value == "Inside one head"
    assert (at.selectbox(key="ih_bert_layer").value, at.selectbox(key="ih_bert_head").value) == (1, 2)


def test_a_model_inside_a_head_cannot_open_says_so_once_beside_the_most_restoring_head(tmp_path):
    """Gemma 2 caps its scores, which Inside a head's steps do not show: its sentence once, in the caption that names
    the most restoring head, and no box or button to open one (the tester saw it said twice)."""
    from bench.tiny_any import save
    from ui.patching import inside_refusal

    folder = save("gemma2", "causal", tmp_path)
    m = models.load("hf:" + folder)
    why = inside_refusal("hf:" + folder, m)
    assert why
    at = _done(_app(patch_clean="abcab", patch_corrupt="abdab", patch_answer="c", patch_wrong="d",
                    state={"model": "hf:", "hf_spec": folder}))
    assert not at.exception and not at.error
    said = [c.value for c in at.caption if why in c.value]
    assert len(said) == 1 and said[0].startswith("Most restoring head: ") and "Cells here open nothing." in said[0]
    assert not [b for b in at.button if b.key == "patch_open_best"]
