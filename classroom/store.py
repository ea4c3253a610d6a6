"""A class's answers in a real database: SQLite in a file by default, any SQLAlchemy URL (PostgreSQL when replicas run
on several machines). The one place answers are written; session state holds nothing that must last.

    store = ClassStore("sqlite:////path/classes.db")
    c = store.start(lesson="attention")                  # c.code: 6 characters for students, c.teacher_key: secret
    f = store.answer(c.code, student="ana", step=2, answer="L0 H2")   # f.correct, f.why
    store.results(c.code, c.teacher_key)                  # a row per first answer: student, step, answer, correct, at
    store.results(c.code, "not the key")                  # PermissionError

What it does not do: render anything (a nickname or an explanation is stored as the text it is, and the page shows it
as text), or decide what is right: a checker (classroom.answers by default) says whether an answer is correct and why.
The first answer of a student to a step is the one the class counts; a retry gets feedback and is not stored.
Thread- and process-safe: every change is one transaction (SQLite: BEGIN IMMEDIATE, WAL; PostgreSQL: the class's
row locked while a student joins), so 30 students answering at once from 3 replicas lose nothing.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from limits.errors import UserError

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed from a projector
CODE_LENGTH = 6
MAX_STUDENTS = 200
NICKNAME_CHARS = 24
ANSWER_CHARS = 200
EXPLAIN_CHARS = 1000
KEEP_DAYS = 30
RATE = (20, 60.0)  # at most 20 answers from one student in 60 s, per process

URL_ENV = "ATTENTION_EXPLORER_CLASSES"  # a SQLAlchemy URL: PostgreSQL when replicas run on several machines


def default_url() -> str:
    """$ATTENTION_EXPLORER_CLASSES, else a SQLite file beside the app's other results:
    sqlite:///~/.cache/attention-explorer/classes.db (the folder made when missing)."""
    if os.environ.get(URL_ENV):
        return os.environ[URL_ENV]
    folder = Path.home() / ".cache" / "attention-explorer"
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'classes.db'}"


meta = MetaData()
classes = Table(
    "classes", meta,
    Column("code", String(CODE_LENGTH), primary_key=True),
    Column("key_hash", String(64), nullable=False),       # sha256 of the teacher key: the key itself is never stored
    Column("lesson", String(64), nullable=False),
    Column("created", DateTime(timezone=True), nullable=False),
    Column("keep", Boolean, nullable=False, default=False),  # kept past KEEP_DAYS
    Column("step", Integer, nullable=False, default=0),      # the lesson step the teacher presents (0: none)
)
students = Table(
    "students", meta,
    Column("code", String(CODE_LENGTH), nullable=False),
    Column("name", String(NICKNAME_CHARS), nullable=False),
    Column("joined", DateTime(timezone=True), nullable=False),
    UniqueConstraint("code", "name"),
)
answers = Table(
    "answers", meta,
    Column("code", String(CODE_LENGTH), nullable=False),
    Column("student", String(NICKNAME_CHARS), nullable=False),
    Column("step", Integer, nullable=False),
    Column("answer", String(ANSWER_CHARS), nullable=False),
    Column("explain", Text, nullable=False, default=""),
    Column("correct", Boolean, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("code", "student", "step"),           # the first answer counts
)


@dataclass(frozen=True)
class Class:
    code: str          # 6 characters, given to students
    teacher_key: str   # secret: opens the class's results; never in a student's link
    lesson: str


@dataclass(frozen=True)
class Feedback:
    correct: bool
    why: str           # one sentence on why, computed from the model the step shows
    counted: bool      # False for a retry: the class counts the first answer only


Checker = Callable[[str, int, str], tuple[bool, str]]  # (lesson, step, answer) -> (right?, why); ValueError if unusable


def _default_checker(lesson: str, step: int, answer: str) -> tuple[bool, str]:
    from classroom import answers as key  # the models load on the first answer, not when a page opens the store

    return key.check(lesson, step, answer)


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def clean(text: str, limit: int, what: str, *, empty_ok: bool = False) -> str:
    """`text` stripped, or ValueError with one sentence: empty, over `limit` characters, or with control characters.
    Markup is kept as text: the page shows it, never renders it.   clean(" ana ", 24, "nickname") -> 'ana'"""
    text = (text or "").strip()
    if not text and not empty_ok:
        raise UserError(f"Please type a {what}.")
    if len(text) > limit:
        raise UserError(f"That {what} is {len(text):,} characters long; at most {limit} are kept. Please shorten it.")
    if any(ord(c) < 32 and c not in "\n\t" for c in text):
        raise UserError(f"That {what} holds control characters; please type plain text.")
    return text


class ClassStore:
    """Classes, students and first answers in one database (see the module's docstring)."""

    def __init__(self, url: str, checker: Checker | None = None, max_students: int = MAX_STUDENTS,
                 rate: tuple[int, float] = RATE):
        sqlite = url.startswith("sqlite")
        self.engine = create_engine(url, **({"connect_args": {"check_same_thread": False, "timeout": 30}}
                                             if sqlite else {"pool_pre_ping": True}))
        if sqlite:
            self._serialise_sqlite_writes()
        meta.create_all(self.engine)
        self.check = checker or _default_checker
        self.max_students = max_students
        self.rate = rate
        self._recent: dict[tuple[str, str], list[float]] = {}
        self._lock = threading.Lock()

    def _serialise_sqlite_writes(self) -> None:
        """WAL (readers never wait for a writer) and BEGIN IMMEDIATE: a transaction takes the write lock when it
        starts, so a count read inside it (the class's cap) cannot go stale before its insert, across processes."""
        @event.listens_for(self.engine, "connect")
        def _connect(conn, _record):
            conn.isolation_level = None  # the driver's own BEGIN off: ours below
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")

        @event.listens_for(self.engine, "begin")
        def _begin(conn):
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    def start(self, lesson: str = "attention") -> Class:
        """A new class with a fresh code and teacher key."""
        key = secrets.token_urlsafe(24)
        for _ in range(20):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            try:
                with self.engine.begin() as db:
                    db.execute(insert(classes).values(code=code, key_hash=_hash(key), lesson=lesson,
                                                      created=_now(), keep=False, step=0))
                return Class(code, key, lesson)
            except IntegrityError:  # that code is taken: draw another
                continue
        raise RuntimeError("no free class code after 20 draws")

    def _class(self, db, code: str, lock: bool = False, ended_ok: bool = False):
        """The class's row, or ValueError: a wrong code, or (for students) an ended class."""
        code = (code or "").strip().upper()
        query = select(classes).where(classes.c.code == code)
        row = db.execute(query.with_for_update() if lock else query).first()
        if row is None:
            raise UserError(f"There is no class with the code {code[:CODE_LENGTH]!r}: check it with your teacher.")
        created = row.created.replace(tzinfo=row.created.tzinfo or UTC)  # SQLite gives it back without its zone
        if not ended_ok and not row.keep and created < _now() - timedelta(days=KEEP_DAYS):
            raise UserError(f"The class {code!r} has ended (classes last {KEEP_DAYS} days).")
        return row

    def join(self, code: str, student: str) -> str:
        """Join with a nickname (nothing personal is asked); returns it cleaned. Joining again is fine."""
        name = clean(student, NICKNAME_CHARS, "nickname")
        with self.engine.begin() as db:
            row = self._class(db, code, lock=True)
            if db.execute(select(students.c.name).where(students.c.code == row.code,
                                                        students.c.name == name)).first():
                return name
            count = db.execute(select(func.count()).select_from(students).where(students.c.code == row.code)).scalar()
            if count >= self.max_students:
                raise UserError(f"This class is full ({self.max_students} students). Ask your teacher.")
            db.execute(insert(students).values(code=row.code, name=name, joined=_now()))
        return name

    def _throttle(self, code: str, student: str) -> None:
        most, window = self.rate
        now = time.monotonic()
        with self._lock:
            recent = [t for t in self._recent.get((code, student), []) if t > now - window]
            if len(recent) >= most:
                raise UserError(f"That is {most} answers in under {window:.0f} s: wait a moment and try again.")
            self._recent[(code, student)] = recent + [now]

    def answer(self, code: str, student: str, step: int, answer: str, explain: str = "") -> Feedback:
        """Check `answer` to `step` and store it if it is this student's first to the step (joining as needed)."""
        name = clean(student, NICKNAME_CHARS, "nickname")
        text = clean(answer, ANSWER_CHARS, "answer")
        why_text = clean(explain, EXPLAIN_CHARS, "explanation", empty_ok=True)
        self._throttle(code.strip().upper(), name)
        with self.engine.connect() as db:
            lesson = self._class(db, code).lesson
        correct, why = self.check(lesson, int(step), text)
        self.join(code, name)
        try:
            with self.engine.begin() as db:
                db.execute(insert(answers).values(code=code.strip().upper(), student=name, step=int(step),
                                                  answer=text, explain=why_text, correct=bool(correct), at=_now()))
            counted = True
        except IntegrityError:  # answered before: the first one counts
            counted = False
        return Feedback(bool(correct), why, counted)

    def _teacher(self, db, code: str, teacher_key: str):
        row = self._class(db, code, ended_ok=True)  # until purged, its teacher still reads, keeps or deletes it
        if not hmac.compare_digest(row.key_hash, _hash(teacher_key or "")):
            raise PermissionError("That is not this class's teacher key.")
        return row

    def results(self, code: str, teacher_key: str) -> pd.DataFrame:
        """A row per first answer, in the order they came: student, step, answer, correct, at (and explain)."""
        with self.engine.connect() as db:
            row = self._teacher(db, code, teacher_key)
            found = db.execute(select(answers.c.student, answers.c.step, answers.c.answer, answers.c.correct,
                                      answers.c.at, answers.c.explain)
                               .where(answers.c.code == row.code).order_by(answers.c.at, answers.c.student)).all()
        return pd.DataFrame(found, columns=["student", "step", "answer", "correct", "at", "explain"])

    def students(self, code: str, teacher_key: str) -> list[str]:
        with self.engine.connect() as db:
            row = self._teacher(db, code, teacher_key)
            return [r.name for r in db.execute(select(students.c.name).where(students.c.code == row.code)
                                               .order_by(students.c.joined))]

    def present(self, code: str, teacher_key: str, step: int) -> None:
        """The teacher presents `step` now (0: no step): the speaker view follows it from another window."""
        with self.engine.begin() as db:
            row = self._teacher(db, code, teacher_key)
            db.execute(update(classes).where(classes.c.code == row.code).values(step=int(step)))

    def presented(self, code: str, teacher_key: str) -> int:
        """The step the teacher presents (0: none)."""
        with self.engine.connect() as db:
            return int(self._teacher(db, code, teacher_key).step)

    def keep(self, code: str, teacher_key: str, keep: bool = True) -> None:
        """Keep the class (and its answers) past KEEP_DAYS, or not."""
        with self.engine.begin() as db:
            row = self._teacher(db, code, teacher_key)
            db.execute(update(classes).where(classes.c.code == row.code).values(keep=keep))

    def delete(self, code: str, teacher_key: str) -> None:
        """The class, its students and its answers, gone."""
        with self.engine.begin() as db:
            row = self._teacher(db, code, teacher_key)
            for table in (answers, students, classes):
                db.execute(delete(table).where(table.c.code == row.code))

    def purge(self, now: datetime | None = None) -> int:
        """Delete the classes older than KEEP_DAYS that are not kept, with their answers; returns how many."""
        cutoff = (now or _now()) - timedelta(days=KEEP_DAYS)
        with self.engine.begin() as db:
            old = [r.code for r in db.execute(select(classes.c.code).where(classes.c.created < cutoff,
                                                                           classes.c.keep.is_(False)))]
            for table in (answers, students, classes):
                db.execute(delete(table).where(table.c.code.in_(old)))
        return len(old)
