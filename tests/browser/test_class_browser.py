"""In a real Chromium, a class: the teacher starts it, 5 students in their own browser contexts join and answer steps
1 to 3 of the lesson (some right, some wrong), and the teacher's live view shows exactly those counts; the CSV holds
exactly those rows; a restarted server keeps them; a student's session cannot open the teacher's view; markup in a
nickname shows as text. Screenshots of both sides at 1280 × 720 go to out/."""
import csv
import io
import re
from pathlib import Path

import pytest

from bench.browser import chromium, new_page, runs, serve, settle, visit
from classroom import answers

OUT = Path(__file__).resolve().parents[2] / "out"
STUDENTS = ("ana", "ben", "cleo", "dev", "<b>zed</b>")
WRONG_AT = {("ben", 1), ("cleo", 2), ("dev", 3), ("<b>zed</b>", 1), ("<b>zed</b>", 3)}  # (student, step) answered wrong


def _pick(step: int, right: bool) -> str:
    q = answers.question("attention", step)
    return sorted(q.correct)[0] if right else next(o for o in q.options if o not in q.correct)


def _click(page, locator) -> None:
    before = runs(page)
    locator.click()
    settle(page, before)


def _tab(page, name: str) -> None:
    """Open a tab (no run: Streamlit draws every tab's content in the same run)."""
    page.get_by_role("tab", name=re.compile(name)).click()
    page.wait_for_timeout(300)


def _answer(page, step: int, pick: str) -> None:
    q = answers.question("attention", step)
    form = page.locator("[data-testid=stForm]").first
    if len(q.options) <= 6:
        form.locator("label", has_text=pick).first.click()
    else:
        box = form.get_by_role("combobox")
        box.click()
        box.fill(pick)  # the list is long and drawn as it scrolls: typing filters it, as a student would
        page.get_by_role("option", name=pick, exact=True).click()
    _click(page, form.get_by_role("button", name=re.compile("^Answer")))


def _teacher_counts(page) -> dict[int, tuple[int, int]]:
    """step -> (answered, right), as the teacher's page says it to a screen reader."""
    text = page.locator("[data-testid=stMain]").inner_text()
    return {int(n): (int(a), int(r)) for n, a, r in re.findall(r"Step (\d+): (\d+) students answered, (\d+) right",
                                                                    text)}


@pytest.fixture
def class_db(tmp_path):
    return {"ATTENTION_EXPLORER_CLASSES": f"sqlite:///{tmp_path / 'classes.db'}"}


@pytest.mark.slow
def test_a_class_of_five_answers_and_the_teacher_sees_exactly_that(class_db, tmp_path):
    OUT.mkdir(exist_ok=True)
    expected = {n: (5, sum((s, n) not in WRONG_AT for s in STUDENTS)) for n in (1, 2, 3)}
    with chromium() as browser:
        with serve(env=class_db) as url:
            teacher = new_page(browser.new_context(accept_downloads=True), 1280, 720)
            visit(teacher, f"{url}/classroom")
            _tab(teacher, "Teach")
            _click(teacher, teacher.get_by_role("button", name="Start a class"))
            code = re.search(r"Class code for students: ([A-Z0-9]{6})",
                             teacher.locator("[data-testid=stMain]").inner_text()).group(1)
            key = teacher.locator("[data-testid=stCode] code").last.inner_text().strip()  # the first: the explainer
            assert len(key) >= 32
            for name in STUDENTS:
                page = new_page(browser.new_context(), 1280, 720)
                visit(page, f"{url}/classroom")
                page.get_by_label(re.compile("^Class code \\(")).fill(code.lower())
                page.get_by_label(re.compile("^Nickname")).fill(name)
                _click(page, page.get_by_role("button", name="Join"))
                assert f"as {name}" in page.locator("[data-testid=stAlert]").first.inner_text()  # text, not markup
                assert page.locator("[data-testid=stAlert] b").count() == 0
                _click(page, page.get_by_role("button", name="Start the lesson"))
                for step in (1, 2, 3):
                    _answer(page, step, _pick(step, (name, step) not in WRONG_AT))
                    verdict = page.locator("[data-testid=stAlert]").filter(has_text=re.compile("^(Right|Not quite)"))
                    assert verdict.first.inner_text().startswith("Right" if (name, step) not in WRONG_AT else "Not")
                    if step == 3 and name == STUDENTS[0]:
                        assert "Teacher notes" not in page.locator("[data-testid=stMain]").inner_text()
                        page.screenshot(path=str(OUT / "class-student.png"), full_page=False)
                    if step < 3:
                        _click(page, page.get_by_role("button", name="Next →"))
                assert key not in page.url and key not in page.content()
                page.context.close()
            teacher.wait_for_function(  # the live view refreshes itself every 5 s
                "n => (document.body.innerText.match(/students answered/g) || []).length >= n", arg=3,
                timeout=60_000)
            teacher.wait_for_timeout(5_500)
            assert _teacher_counts(teacher) == expected
            assert "<b>zed</b>" in teacher.locator("[data-testid=stMain]").inner_text()
            teacher.screenshot(path=str(OUT / "class-teacher.png"))
            teacher.locator(".st-key-class_step_2").screenshot(path=str(OUT / "class-teacher-step.png"))
            with teacher.expect_download() as got:
                teacher.get_by_role("button", name="Download the answers (CSV)").click()
            rows = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_text())))
            assert sorted((r["student"], int(r["step"]), r["correct"] == "True") for r in rows) == sorted(
                (s, n, (s, n) not in WRONG_AT) for s in STUDENTS for n in (1, 2, 3))
            speaker = new_page(browser.new_context(), 1280, 720)  # the teacher's second window, beside the projector
            visit(speaker, f"{url}/classroom")
            _tab(speaker, "Teach")
            speaker.get_by_label("Class code", exact=True).fill(code)
            speaker.get_by_label("Teacher key").fill(key)
            _click(speaker, speaker.get_by_role("button", name="Open my class"))
            _tab(speaker, "Teach")
            speaker.locator("label", has_text="Speaker view").click()
            speaker.wait_for_function("() => /Waiting for the lesson/.test(document.body.innerText)", timeout=60_000)
            _click(teacher, teacher.get_by_role("button", name="Present the lesson"))  # the projector's window
            speaker.wait_for_function("() => /Step 1 of 10/.test(document.body.innerText)", timeout=60_000)
            speaker.wait_for_function("() => /Step 1: 5 students answered/.test(document.body.innerText)",
                                      timeout=60_000)
            assert "Answer." in speaker.locator("[data-testid=stMain]").inner_text()
            speaker.screenshot(path=str(OUT / "class-speaker.png"))
            speaker.context.close()
            teacher.context.close()

            intruder = new_page(browser.new_context(), 1280, 720)  # a student who knows the code, not the key
            visit(intruder, f"{url}/classroom")
            _tab(intruder, "Teach")
            intruder.get_by_label("Class code", exact=True).fill(code)
            intruder.get_by_label("Teacher key").fill("guess")
            _click(intruder, intruder.get_by_role("button", name="Open my class"))
            assert "not this class's teacher key" in intruder.locator("[data-testid=stMain]").inner_text()
            assert "students answered" not in intruder.locator("[data-testid=stMain]").inner_text()

        with serve(env=class_db) as url:  # a restart: the answers are in the database, not in the server
            again = new_page(browser.new_context(), 1280, 720)
            visit(again, f"{url}/classroom")
            _tab(again, "Teach")
            again.get_by_label("Class code", exact=True).fill(code)
            again.get_by_label("Teacher key").fill(key)
            _click(again, again.get_by_role("button", name="Open my class"))
            again.wait_for_function("() => /students answered/.test(document.body.innerText)", timeout=60_000)
            assert _teacher_counts(again) == expected
