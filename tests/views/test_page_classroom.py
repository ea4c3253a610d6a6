"""AppTest of the Class view and the lesson's answer box: a teacher starts a class, students join and answer, the
teacher's live view counts exactly the stored first answers; a wrong key or code gets a sentence, markup stays text.
Steps 3 and 7 need no model, so these tests load none."""
import json

from streamlit.testing.v1 import AppTest

from classroom import answers
from tests.views.view_at import open_view
from ui.classroom.class_mode import store
from ui.classroom.lesson import LESSON

RIGHT = {3: "only the offset n − m", 7: "8 KiB"}
WRONG = {3: "the positions m and n themselves", 7: "2 KiB"}


def _teacher() -> tuple[AppTest, str, str]:
    at = open_view("classroom")
    at.button(key="class_start").click().run()
    assert not at.exception, at.exception
    code, key = at.session_state["class_teacher"]
    assert any(code in m.value for m in at.markdown) and any(c.value == key for c in at.code)
    assert any("shown once" in w.value for w in at.warning)
    return at, code, key


def _student(code: str, name: str) -> AppTest:
    at = open_view("classroom")
    at.text_input(key="class_code").input(code.lower())
    at.text_input(key="class_name").input(name)
    next(b for b in at.button if b.label == "Join").click().run()
    assert not at.exception, at.exception
    return at


def _answer(at: AppTest, step: int, view: str, pick: str, explain: str = "") -> AppTest:
    at.session_state["lesson"] = step
    at.switch_page(f"views/{view}.py").run()
    at.radio(key=f"class_pick_{step}").set_value(pick)
    at.text_area(key=f"class_explain_{step}").input(explain)
    next(b for b in at.button if b.label.startswith("Answer")).click().run()
    assert not at.exception, at.exception
    return at


def test_a_class_answers_and_its_teacher_sees_exactly_that():
    teacher, code, key = _teacher()
    ana = _student(code, "ana")
    assert ana.session_state["class_joined"] == (code, "ana")
    _answer(ana, 3, "positional", RIGHT[3], "rotations")
    assert any(s.value == "Right. " + answers.question("attention", 3).why for s in ana.success)
    _answer(ana, 3, "positional", WRONG[3])                             # a retry: feedback, not counted
    assert any(e.value.startswith("Not quite. ") for e in ana.error)
    assert any("first answer is the one the class counts" in c.value for c in ana.caption)
    ben = _student(code, "<b onclick=x>ben</b>")
    _answer(ben, 3, "positional", WRONG[3])
    _answer(ben, 7, "kv_cache", RIGHT[7])
    stored = store().results(code, key)
    assert [tuple(r) for r in stored[["student", "step", "answer", "correct"]].itertuples(index=False)] == [
        ("ana", 3, RIGHT[3], True), ("<b onclick=x>ben</b>", 3, WRONG[3], False),
        ("<b onclick=x>ben</b>", 7, RIGHT[7], True)]

    teacher.run()
    assert not teacher.exception, teacher.exception
    charts = {c.key: c for c in teacher.get("plotly_chart") if c.key}
    assert set(charts) >= {"class_chart_3", "class_chart_7"}
    bars = json.loads(charts["class_chart_3"].proto.spec)["data"]
    assert sorted((x, y) for b in bars for x, y in zip(b["x"], b["y"])) == [(RIGHT[3], 1), (WRONG[3], 1)]
    by_kind = {b["name"]: list(zip(b["x"], b["y"])) for b in bars}   # half right; the wrong answers, commonest first
    assert by_kind == {"right": [(RIGHT[3], 1)], "wrong": [(WRONG[3], 1)]}
    assert any("2 students answered, 1 right" in c.value for c in teacher.caption)  # the screen reader's sentence
    said = [d.value for d in teacher.dataframe]
    assert any(list(d["explain"]) == ["rotations"] for d in said)
    assert any("2 students, 3 first answers" in c.value for c in teacher.caption)


def test_a_wrong_code_key_or_nickname_gets_a_sentence_and_nothing_is_stored():
    _, code, key = _teacher()
    bad = _student("ZZZZZZ", "ana")
    assert "class_joined" not in bad.session_state and any("no class with the code" in e.value for e in bad.error)
    long = _student(code, "")
    assert any("type a nickname" in e.value for e in long.error)
    intruder = open_view("classroom")                  # a student's session: no key, so no class's results
    intruder.text_input(key="class_open_code").input(code)
    intruder.text_input(key="class_open_key").input("guess")
    next(b for b in intruder.button if b.label == "Open my class").click().run()
    assert "class_teacher" not in intruder.session_state
    assert any("not this class's teacher key" in e.value for e in intruder.error)
    assert store().results(code, key).empty and store().students(code, key) == []


def test_without_a_class_an_answer_is_checked_and_not_stored():
    at = open_view("positional", lesson=3)
    at.radio(key="class_pick_3").set_value(WRONG[3])
    next(b for b in at.button if b.label == "Answer").click().run()
    assert any(e.value == "Not quite. " + answers.question("attention", 3).why for e in at.error)
    assert any("not stored" in c.value for c in at.caption)


def test_the_speaker_view_follows_the_step_the_teacher_presents():
    teacher, code, key = _teacher()
    speaker = open_view("classroom")
    speaker.text_input(key="class_open_code").input(code)
    speaker.text_input(key="class_open_key").input(key)
    next(b for b in speaker.button if b.label == "Open my class").click().run()
    speaker.toggle(key="class_speaker").set_value(True).run()
    assert any("Waiting for the lesson" in i.value for i in speaker.info)
    teacher.button(key="class_present").click().run()               # the presenting window opens step 1
    assert not teacher.exception and teacher.session_state["lesson"] == 1
    speaker.run()
    assert any(h.value.startswith("Step 1 of 10") for h in speaker.header)
    assert any(m.value.startswith("**Answer.** " + LESSON[0].notes.answer[:40]) for m in speaker.markdown)
    assert any("→ **L0 H2**" in m.value for m in speaker.markdown)  # the pick computed from the model
    next(b for b in teacher.button if b.label == "Next →").click().run()
    speaker.run()
    assert any(h.value.startswith("Step 2 of 10") for h in speaker.header)
    assert store().presented(code, key) == 2
