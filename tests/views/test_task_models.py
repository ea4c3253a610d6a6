"""A built-in trained for one task says so where it reads the sidebar's text, and offers an example of its task
(or BERT) when the text is something else: the date models on an English sentence, the digit sorter."""
from streamlit.testing.v1 import AppTest

SENTENCE = "The animal didn't cross the street because it was too tired."


def _app(model: str, text: str = SENTENCE) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["model"], at.session_state["text"] = model, text
    return at.run()


def _says(at: AppTest, words: str) -> bool:
    return any(words in e.value for e in [*at.info, *at.caption])


def test_the_date_transformer_says_what_it_reads_and_puts_a_date_in():
    at = _app("seq2seq-transformer")
    for view in ("heads", "graph"):
        at.switch_page(f"views/{view}.py").run()
        assert not at.exception and not at.error, view
        assert any("trained only on written dates" in i.value and "This text is not one" in i.value
                   for i in at.info), view
    at.button(key="graph_task_example").click().run()
    assert at.sidebar.text_area(key="text").value == "23 November 2026"
    assert not at.exception and not at.info and _says(at, "trained only on written dates")  # one line, no button
    assert "2026-11-23" in " ".join(t.value for t in at.text)  # what it wrote for its own kind of text
    at.switch_page("views/compare.py").run()
    assert any("This text is not one" in i.value for i in at.info)
    at.button(key="cmp_task_example").click().run()
    assert (at.text_input(key="cmp_a").value, at.text_input(key="cmp_b").value) == ("23 November 2026",
                                                                                    "23 December 2026")
    assert not at.exception and not at.error and _says(at, "trained only on written dates")


def test_the_digit_sorter_offers_digits_or_bert():
    at = _app("tiny")
    at.switch_page("views/heads.py").run()
    assert not at.exception and _says(at, "trained only on strings of up to 10 digits")
    at.button(key="heads_task_bert").click().run()
    assert at.sidebar.selectbox(key="model").value == "bert" and not at.exception
    assert not _says(at, "trained only on")  # BERT is no task model
