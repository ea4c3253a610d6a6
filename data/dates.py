"""Dates as people write them, paired with ISO 8601: the data the seq2seq date models learn from.

`sample(rng)` draws one (written, iso) pair; `dataset(n, seed, split)` draws n of them reproducibly;
`parse(text)` is a rule-based reader of the same formats, an independent path the tests and the
models' "is this a date?" notice rely on. It covers exactly the formats below and nothing else
(no numeric forms like "3/3/2021", no other languages, no two-digit years):

    3 march 2021          day month year
    march 3, 2021         month day, year (comma optional)
    3rd of march 2021     ordinals, with or without "of" / "the"
    tuesday, march 3, 2021  optional weekday, full or abbreviated
    3 mar 2021, sept 3    abbreviated months, optionally with a period
    any letter case, years 1900-2099

The held-out split is by calendar day: a day whose ordinal is divisible by 10 only appears in the
"test" split, so a test date has never been seen in training in any spelling.
"""
from __future__ import annotations

import datetime as dt
import random
import re

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]
MONTH_ABBREV = {m: [m[:3]] for m in MONTHS} | {"september": ["sep", "sept"]}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
WEEKDAY_ABBREV = {"tuesday": ["tue", "tues"], "thursday": ["thu", "thur", "thurs"]}
FIRST, LAST = dt.date(1900, 1, 1), dt.date(2099, 12, 31)
CHARS = "abcdefghijklmnopqrstuvwxyz0123456789 ,."  # the written side's alphabet, after lower-casing
MAX_LEN = 40  # longest written date the models accept: "wednesday, the 23rd of september, 2021" is 38


def ordinal(day: int) -> str:
    """3 -> '3rd', 11 -> '11th', 22 -> '22nd'"""
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _month_word(rng: random.Random, month: int) -> str:
    full = MONTHS[month - 1]
    if rng.random() < 0.5:
        return full
    return rng.choice(MONTH_ABBREV[full]) + ("." if rng.random() < 0.2 else "")


def _weekday_word(rng: random.Random, day: dt.date) -> str:
    full = WEEKDAYS[day.weekday()]
    return full if rng.random() < 0.6 else rng.choice(WEEKDAY_ABBREV.get(full, [full[:3]]))


def _case(rng: random.Random, text: str) -> str:
    r = rng.random()
    if r < 0.4:
        return text
    if r < 0.7:
        return text.title()
    if r < 0.85:
        return text.upper()
    return "".join(c.upper() if rng.random() < 0.5 else c for c in text)


def random_day(rng: random.Random, split: str = "train") -> dt.date:
    """A uniform calendar day in 1900-2099 from the split: 'train' (ordinal % 10 != 0) or 'test'."""
    while True:
        day = dt.date.fromordinal(rng.randint(FIRST.toordinal(), LAST.toordinal()))
        if (day.toordinal() % 10 == 0) == (split == "test"):
            return day


def write(rng: random.Random, day: dt.date) -> str:
    """One way a person might write `day`, e.g. 'Tuesday, March 3rd, 2026'."""
    d = ordinal(day.day) if rng.random() < 0.4 else str(day.day)
    m, y = _month_word(rng, day.month), str(day.year)
    style = rng.randrange(3)
    if style == 0:
        text = f"{d} {m} {y}"
    elif style == 1:
        text = f"{m} {d}{',' if rng.random() < 0.7 else ''} {y}"
    else:
        d = ordinal(day.day)
        text = f"{'the ' if rng.random() < 0.3 else ''}{d} of {m}{',' if rng.random() < 0.3 else ''} {y}"
    if rng.random() < 0.3:
        text = f"{_weekday_word(rng, day)}{',' if rng.random() < 0.7 else ''} {text}"
    return _case(rng, text)


def sample(rng: random.Random, split: str = "train") -> tuple[str, str]:
    """('3rd of MARCH 2021', '2021-03-03')"""
    day = random_day(rng, split)
    return write(rng, day), day.isoformat()


def dataset(n: int, seed: int, split: str = "train") -> list[tuple[str, str]]:
    """n (written, iso) pairs, the same for the same (n, seed, split)."""
    rng = random.Random(seed)
    return [sample(rng, split) for _ in range(n)]


_MONTH_OF = {m: i + 1 for i, m in enumerate(MONTHS)} | {
    a: MONTHS.index(m) + 1 for m, abbrevs in MONTH_ABBREV.items() for a in abbrevs}
_WEEKDAY_WORDS = set(WEEKDAYS) | {a for abbrevs in WEEKDAY_ABBREV.values() for a in abbrevs} | {
    w[:3] for w in WEEKDAYS}
_MONTH_RE = "(?P<month>" + "|".join(sorted(_MONTH_OF, key=len, reverse=True)) + r")\.?"
_DAY_RE = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_PATTERNS = [re.compile(p) for p in (
    rf"(?:the )?{_DAY_RE}(?: of)? {_MONTH_RE},? (?P<year>\d{{4}})",
    rf"{_MONTH_RE} {_DAY_RE},? (?P<year>\d{{4}})",
)]


def fields(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) as written in one of this module's formats, not checked against the calendar or the
    years the models learned: '30 february 1850' -> (1850, 2, 30); 'tomorrow' -> None."""
    words = " ".join(text.lower().split())
    head, _, rest = words.partition(" ")
    if head.rstrip(",") in _WEEKDAY_WORDS and rest:
        words = rest
    for pattern in _PATTERNS:
        match = pattern.fullmatch(words)
        if match:
            return int(match["year"]), _MONTH_OF[match["month"]], int(match["day"])
    return None


def parse(text: str) -> str | None:
    """Read a date written in one of this module's formats: 'march 3rd, 2021' -> '2021-03-03', else None
    (also for a day the calendar does not have, or a year outside 1900-2099)."""
    found = fields(text)
    if found is None:
        return None
    try:
        day = dt.date(*found)
    except ValueError:
        return None
    return day.isoformat() if FIRST <= day <= LAST else None
