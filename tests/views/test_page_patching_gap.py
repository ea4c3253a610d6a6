"""AppTest: the Patching view reads its gap out plainly (issue: on a tiny random OPT the page printed "clean +0.11,
corrupted +0.11" for a gap of 0.0012 and mapped scores far past [0, 1] with no word why; on Gemma 2 the clean
difference was below the corrupted one with no word on the score's sign). Real tiny models saved here, the view run
from a link; the numbers compared are experiments.patching's own for the same folder and pair."""
from streamlit.testing.v1 import AppTest

import models
from bench.tiny_any import save
from experiments.patching import patch_heads, shown
from tests.views.view_at import finished, open_linked

PAIR = dict(patch_clean="The cat sat on", patch_corrupt="The dog sat on", patch_answer="a", patch_wrong="b")


def _page(folder: str) -> AppTest:
    at = finished(open_linked("patching", state={"model": "hf:", "hf_spec": folder}, **PAIR), "patching")
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


def test_a_tiny_gap_is_shown_with_digits_that_differ_and_a_warning_why_the_scores_blow_up(tmp_path):
    folder = save("opt", "causal", tmp_path)
    p = patch_heads(models.load("hf:" + folder), *PAIR.values())
    gap = abs(p.clean_diff - p.corrupt_diff)
    assert 0 < gap < 0.1 * max(abs(p.clean_diff), abs(p.corrupt_diff))  # the case the tester met
    at = _page(folder)
    c, k = shown(p.clean_diff, p.corrupt_diff)
    assert c != k and f"clean **{c}**, corrupted **{k}**" in at.markdown[0].value
    warned = " ".join(w.value for w in at.warning)
    assert f"differ by {gap:.2g}" in warned and "divides a change in the difference by this gap" in warned
    assert f"(here they run from {p.scores.min():+.2f} to {p.scores.max():+.2f})" in warned


def test_clean_below_corrupted_says_what_the_sign_means(tmp_path):
    folder = save("gemma2", "causal", tmp_path)
    p = patch_heads(models.load("hf:" + folder), *PAIR.values())
    assert p.clean_diff < p.corrupt_diff
    warned = " ".join(w.value for w in _page(folder).warning)
    c, k = shown(p.clean_diff, p.corrupt_diff)
    assert f"less than the corrupted text does ({c} < {k}), so the gap is negative" in warned
    assert "The gap is tiny" not in warned


def test_shown_gives_two_significant_digits_and_digits_enough_for_the_gap():
    """The gap the two numbers show is the gap within a tenth of it: +0.35 and +0.36 read as 0.01 apart where the
    warning under them said 0.0033."""
    assert shown(0.1109, 0.1097) == ("+0.1109", "+0.1097")
    assert shown(0.35124, 0.35454) == ("+0.3512", "+0.3545")
    assert shown(0.00304, 0.0257) == ("+0.0030", "+0.0257")
    assert shown(1.14, -3.14) == ("+1.14", "-3.14")
    assert shown(0.5, 0.5) == ("+0.50000000", "+0.50000000")  # equal: no digit makes them differ


def test_an_hf_sequence_classifier_is_patched_on_the_page_by_its_class_logit_difference(tmp_path):
    folder = save("bert", "classifier", tmp_path, num_labels=2, id2label={0: "neg", 1: "pos"},
                  label2id={"neg": 0, "pos": 1})
    at = AppTest.from_file("../../app.py", default_timeout=300)
    for k, v in dict(patch_clean="the film was great", patch_corrupt="the film was awful", patch_answer="pos",
                     patch_wrong="neg").items():
        at.query_params[k] = v
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = folder
    at.run()
    at = finished(at.switch_page("views/patching.py").run(), "patching")
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    assert not any("predicts no token or class" in i.value for i in at.info)
    p = patch_heads(models.load("hf:" + folder), "the film was great", "the film was awful", "pos", "neg")
    c, k = shown(p.clean_diff, p.corrupt_diff)
    assert at.markdown[0].value.startswith(f"**Class logit difference**, logit('pos') − logit('neg'): clean **{c}**")


def test_a_classifiers_and_a_masked_lms_example_is_one_they_can_run(tmp_path):
    """The example of a classifier was IOI's ' Mary' / ' John' ("' Mary' is not one of this classifier's labels"), and
    a masked LM's had no mask: now a review in the classifier's own labels, and IOI with the mask where the name goes.
    Opened with no pair of the visitor's own, the page runs the example with no sentence against it."""
    labels = dict(num_labels=2, id2label={0: "neg", 1: "pos"}, label2id={"neg": 0, "pos": 1})
    for kind, extra, answer, clean_end in (("classifier", labels, "pos", "was good."), ("masked", {}, "M", "<mask>")):
        folder = save("bert", kind, tmp_path / kind, **extra)
        at = finished(open_linked("patching", state={"model": "hf:", "hf_spec": folder}), "patching")
        assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
        assert not any("does not fit this model" in i.value for i in at.info)
        assert at.text_input(key="patch_answer").value == answer
        assert at.text_input(key="patch_clean").value.endswith(clean_end)
