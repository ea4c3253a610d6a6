"""AppTest of ui.classroom.share through the app frame: what a link asks for and the app cannot use is named in one
notice
and dropped from the URL: a setting the open view does not show, a choice a list does not hold, in whole or in
part. (A path no view has is checked in a real browser: tests/browser/test_links_browser.py.)"""
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui.classroom import links


def _open(view: str, params: dict) -> AppTest:
    at = AppTest.from_file("../../../app.py", default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    return at.switch_page(links.path(view)).run()


def _notice(at: AppTest) -> str:
    return " ".join(w.value for w in at.warning if "link parameters" in w.value)


def test_a_setting_the_view_does_not_show_as_linked_is_named_and_dropped():
    at = _open("inside_head", {"ih_d_model": "99999", "ih_bert_layer": "L2"})  # the toy's d_model, BERT on screen
    assert not at.exception
    assert "'ih_d_model' (no such setting on screen here)" in _notice(at) and "ih_bert_layer" not in _notice(at)
    assert "ih_d_model" not in at.query_params and at.query_params["ih_bert_layer"] == "L2"
    assert at.selectbox(key="ih_bert_layer").value == 2
    at.radio(key="ih_model").set_value("toy").run()  # the toy opens on its own default, not on the dropped value
    assert not at.exception and at.selectbox(key="ih_d_model").value == 8 and not _notice(at)


def test_the_same_setting_shown_but_out_of_its_choices_is_named():
    at = _open("inside_head", {"ih_model": "Toy layer", "ih_d_model": "99999"})
    assert "'ih_d_model' ('99999' is not a choice here)" in _notice(at)


def test_a_list_choice_the_sentences_do_not_hold_is_named():
    at = _open("compare", {"cmp_tokens": "zzz"})
    assert not at.exception and "'cmp_tokens' ('zzz' is not a choice here)" in _notice(at)
    kept = _open("compare", {"cmp_tokens": ["zzz", "bank (A6 · B5)"]})
    assert "'cmp_tokens' ('zzz' + 'bank (A6 · B5)' is not all a choice here: 'bank (A6 · B5)' is used)" in \
        _notice(kept)
    assert not _notice(_open("compare", {"cmp_tokens": "bank (A6 · B5)"}))  # a good choice is not reported


def test_a_default_list_in_a_link_is_not_reported():
    at = _open("positional", {"pos_dims": ["4", "5", "6", "7"], "pos_tab": "Sinusoids"})
    assert not at.exception and not _notice(at)


def test_a_folder_written_inline_in_the_model_parameter_opens_that_folder():
    """?model=hf:<folder> fell back to BERT (no choice of the model box is that string); it is read as the sidebar
    writes it: model=hf: and the folder in hf_spec."""
    folder = str(Path(__file__).parents[3] / "models" / "weights" / "gpt")
    at = _open("heads", {"model": f"hf:{folder}"})
    assert not at.exception and not _notice(at)
    assert at.selectbox(key="model").value == "hf:" and at.text_input(key="hf_spec").value == folder
    assert not at.error, [e.value for e in at.error]
    summary = " ".join(c.value for c in at.caption)
    assert "key/value head" in summary, summary  # the folder's model (grouped-query heads), not BERT, the default
