"""classroom.store on SQLite and on a PostgreSQL server started here: codes and keys, first answers, the teacher's
results, bad input, a restart, and 30 students from 3 processes at once losing nothing. The answers are checked by
the lesson's real key (steps 3, 4 and 7 need no model, so these tests load none)."""
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from classroom import answers
from classroom.store import CODE_ALPHABET, ClassStore, classes

ROOT = Path(__file__).resolve().parents[2]
RIGHT = {3: "only the offset n − m", 4: "8", 7: "8 KiB"}
WRONG = {3: "the positions m and n themselves", 4: "5", 7: "2 KiB"}


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.db'}"
    return request.getfixturevalue("postgres_url")


def test_a_class_counts_first_answers_and_only_its_teacher_reads_them(url):
    store = ClassStore(url)
    c = store.start(lesson="attention")
    assert len(c.code) == 6 and set(c.code) <= set(CODE_ALPHABET) and len(c.teacher_key) >= 32
    f = store.answer(c.code, student="ana", step=3, answer=RIGHT[3])
    assert f.correct and f.counted and f.why == answers.question("attention", 3).why
    wrong = store.answer(c.code, student="ben", step=3, answer=WRONG[3])
    assert not wrong.correct and wrong.counted
    retry = store.answer(c.code.lower(), student="ben", step=3, answer=RIGHT[3])  # a code typed in lower case
    assert retry.correct and not retry.counted                 # feedback, but the first answer counts
    store.answer(c.code, student="ben", step=7, answer=RIGHT[7], explain="2 · 4 · 8 · 32 · 4")
    f = store.answer(c.code, student="cleo", step=1, answer="L0 H2")  # the contract's example (loads MiniLM)
    assert f.correct is True and f.counted and "previous-token head" in f.why
    got = store.results(c.code, c.teacher_key)
    assert list(got.columns[:5]) == ["student", "step", "answer", "correct", "at"]
    assert [tuple(r) for r in got[["student", "step", "answer", "correct"]].itertuples(index=False)] == [
        ("ana", 3, RIGHT[3], True), ("ben", 3, WRONG[3], False), ("ben", 7, RIGHT[7], True), ("cleo", 1, "L0 H2", True)]
    assert got.loc[2, "explain"] == "2 · 4 · 8 · 32 · 4"
    with pytest.raises(PermissionError):
        store.results(c.code, "not the key")
    with pytest.raises(PermissionError):
        store.results(c.code, "")
    assert ClassStore(url).results(c.code, c.teacher_key).equals(got)  # a restart (a new store on the same database)
    assert store.presented(c.code, c.teacher_key) == 0
    store.present(c.code, c.teacher_key, 3)                     # the speaker view follows the presented step
    assert ClassStore(url).presented(c.code, c.teacher_key) == 3
    with pytest.raises(PermissionError):
        store.present(c.code, "not the key", 4)
    other = store.start()
    assert other.code != c.code and store.results(other.code, other.teacher_key).empty
    with pytest.raises(PermissionError):
        store.results(other.code, c.teacher_key)                # one class's key opens no other


def test_bad_input_gets_a_sentence_and_stores_nothing(url):
    store = ClassStore(url, max_students=3, rate=(5, 60.0))
    c = store.start()
    for code in ("ZZZZZZ", "", "x" * 10_000):
        with pytest.raises(ValueError, match="no class with the code"):
            store.answer(code, "ana", 3, RIGHT[3])
    with pytest.raises(ValueError, match="at most 24"):
        store.answer(c.code, "a" * 10_000, 3, RIGHT[3])
    with pytest.raises(ValueError, match="at most 1000"):
        store.answer(c.code, "ana", 3, RIGHT[3], explain="why " * 2_500)
    with pytest.raises(ValueError, match="not one of this step's choices"):
        store.answer(c.code, "ana", 3, "<b>offset</b>")
    with pytest.raises(ValueError, match="steps 1 to 10"):
        store.answer(c.code, "ana", 11, "1")
    with pytest.raises(ValueError, match="type a nickname"):
        store.answer(c.code, "   ", 3, RIGHT[3])
    with pytest.raises(ValueError, match="control characters"):
        store.answer(c.code, "ana\x00", 3, RIGHT[3])
    assert store.results(c.code, c.teacher_key).empty and store.students(c.code, c.teacher_key) == []
    markup = "<b onclick=x>ana</b>"
    store.answer(c.code, markup, 3, RIGHT[3], explain="<img src=x onerror=alert(1)>")
    got = store.results(c.code, c.teacher_key)
    assert got.loc[0, "student"] == markup and got.loc[0, "explain"] == "<img src=x onerror=alert(1)>"  # as text
    store.join(c.code, "ben")
    store.join(c.code, "cleo")
    assert store.join(c.code, "ben") == "ben"                                  # joining again is fine
    with pytest.raises(ValueError, match="full"):
        store.join(c.code, "dan")
    for step in (4, 7, 4, 7, 4):                                                # the 6th answer in a minute waits
        store.answer(c.code, "ben", step, RIGHT[step])
    with pytest.raises(ValueError, match="wait a moment"):
        store.answer(c.code, "ben", 3, RIGHT[3])
    assert sorted(store.students(c.code, c.teacher_key)) == sorted([markup, "ben", "cleo"])


def test_classes_end_after_30_days_unless_kept_and_delete_takes_everything(url):
    store = ClassStore(url)
    old, kept, new = store.start(), store.start(), store.start()
    for c in (old, kept, new):
        store.answer(c.code, "ana", 7, RIGHT[7])
    with store.engine.begin() as db:
        db.execute(update(classes).where(classes.c.code.in_([old.code, kept.code]))
                   .values(created=datetime.now(UTC) - timedelta(days=31)))
    store.keep(kept.code, kept.teacher_key)
    with pytest.raises(ValueError, match="has ended"):
        store.answer(old.code, "ben", 7, RIGHT[7])
    assert store.purge() == 1
    with pytest.raises(ValueError, match="no class"):
        store.results(old.code, old.teacher_key)
    assert len(store.results(kept.code, kept.teacher_key)) == 1
    with pytest.raises(PermissionError):
        store.delete(new.code, "not the key")
    store.delete(new.code, new.teacher_key)
    with pytest.raises(ValueError, match="no class"):
        store.answer(new.code, "ana", 7, RIGHT[7])


REPLICA = """
import sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from classroom.store import ClassStore
url, code, replica, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
right, wrong = {right!r}, {wrong!r}
store = ClassStore(url)
while not go.exists():  # every replica starts answering at once
    time.sleep(0.01)
def student(i):
    for step in (3, 4, 7):
        store.answer(code, f"r{{replica}}-s{{i}}", step, (right if (i + step) % 3 else wrong)[step])
with ThreadPoolExecutor(10) as pool:
    list(pool.map(student, range(10)))
"""


@pytest.mark.slow  # three processes that each import the store: ~7 s a database
def test_thirty_students_from_three_processes_at_once_lose_nothing(url, tmp_path):
    """Three replicas' processes (each its own store, as on three servers), ten students each on their own thread."""
    store = ClassStore(url)
    c = store.start()
    go = tmp_path / "go"
    code = REPLICA.format(right=RIGHT, wrong=WRONG)
    replicas = [subprocess.Popen([sys.executable, "-c", code, url, c.code, str(r), str(go)], cwd=ROOT,
                                 env=dict(os.environ, PYTHONPATH=str(ROOT))) for r in range(3)]
    go.touch()
    assert [p.wait(600) for p in replicas] == [0, 0, 0]
    got = store.results(c.code, c.teacher_key)
    assert len(got) == 90 and len(store.students(c.code, c.teacher_key)) == 30
    assert not got.duplicated(["student", "step"]).any()
    expected = sum(bool((i + step) % 3) for _ in range(3) for i in range(10) for step in (3, 4, 7))
    assert int(got["correct"].sum()) == expected


def test_the_database_is_the_environments_url_or_a_sqlite_file_in_the_users_cache(monkeypatch, tmp_path):
    from classroom.store import URL_ENV, default_url

    monkeypatch.setenv(URL_ENV, "postgresql+psycopg://explorer@db/explorer")
    assert default_url() == "postgresql+psycopg://explorer@db/explorer"
    monkeypatch.delenv(URL_ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_url() == f"sqlite:///{tmp_path / '.cache' / 'attention-explorer' / 'classes.db'}"
    assert (tmp_path / ".cache" / "attention-explorer").is_dir()
