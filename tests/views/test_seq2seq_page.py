from streamlit.testing.v1 import AppTest

# the classroom package, imported first: a view run alone puts views/ first on sys.path, where views/classroom.py
# would stand in for the package when ui.classroom imports classroom.answers
import classroom.answers  # noqa: F401

PAGE = "../../views/seq2seq.py"  # run on its own: the page reads the sidebar's device from session_state


def run_page(tab: str | None = None):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["device"] = "cpu"
    if tab:
        at.session_state["s2s_tab"] = tab
    return at.run()


def test_both_attentions_decode_the_default_date_side_by_side():
    at = run_page()
    assert not at.exception
    assert [m.value for m in at.metric] == ["2021-03-03", "2021-03-03"]
    assert any("Bahdanau" in s.value for s in at.header) and any("Luong" in s.value for s in at.header)
    assert sum(m.value.startswith("$\\begin{aligned}") for m in at.markdown) == 2  # both formulas, as inline math
    assert any("W_s" in c.value for c in at.code)
    assert any("fixed context vector" in c.value and "2021-03-03" in c.value for c in at.caption)
    assert not any(h.value == "The bottleneck, measured" for h in at.header)  # only the open tab runs
    at.session_state["s2s_tab"] = "Without attention: the bottleneck"
    at.run()
    assert any(h.value == "The bottleneck, measured" for h in at.header) and not at.metric
    assert any("With attention" in m.value and "right" in m.value for m in at.markdown)
    assert any("Without attention" in m.value and "wrong" in m.value for m in at.markdown)
    assert not at.warning and not at.error


def test_stepping_and_beam_keep_the_answer():
    at = run_page()
    at.slider(key="s2s_step").set_value(3).run()
    at.number_input(key="s2s_beam").set_value(3).run()
    assert not at.exception
    assert [m.value for m in at.metric] == ["2021-03-03", "2021-03-03"]
    at.session_state["s2s_tab"] = "Transformer and beam search"
    at.run()
    assert not at.exception and not at.metric and len(at.dataframe[0].value["output"]) == 1 + 3  # greedy, 3 beams
    at.session_state["s2s_tab"] = "Bahdanau and Luong"
    at.run()
    assert at.slider(key="s2s_step").value == 3  # kept while another tab was open


def test_not_a_date_decodes_with_a_note():
    at = run_page()
    at.text_input(key="s2s_date").set_value("the river bank was dirty").run()
    assert not at.exception and len(at.metric) == 2
    assert any("only knows dates" in w.value for w in at.warning)


def test_too_long_and_wrong_alphabet_get_one_sentence():
    at = run_page()
    at.text_input(key="s2s_date").set_value("x" * 45).run()
    assert not at.exception
    assert "at most 40" in at.error[0].value and not at.metric
    at = run_page("Without attention: the bottleneck")
    at.text_input(key="s2s_reverse").set_value("not letters!").run()
    assert not at.exception and any("a-z" in e.value for e in at.error)
