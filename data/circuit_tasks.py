"""Built-in tasks for circuits, as pairs (clean, corrupt, answer, wrong) whose answer is known; no model code here.

    brackets(2)  -> [("total = sum(values", "total = sum[values", ")", "]"), ("x = len(data", ...)]
    repeats(1)   -> [("ra ri he bo ro ... ra ri", "zo ho la ... ra ri", "he", "go")]
    from_csv(b"clean,corrupt,answer,wrong\nba ke ba,mi ke ba,ke,lo\n") -> [("ba ke ba", "mi ke ba", "ke", "lo")]
    names(1, one, count) -> [("When Mary and John went to the store, John gave a drink to",
                              "When Mary and John went to the store, Tom gave a drink to", " Mary", " John")]
    years(2)     -> [("the 28th of july, 2097", "the 28th of july, 1997", "2", "1"), ("the 2nd of may, 1965", ...)]

brackets: an opened bracket is closed by its own kind (the built-in `gpt` read Python); the corrupted text opens
the other kind, as many tokens. repeats: random syllables of the induction model, then the first half of them again;
the answer is the syllable that followed there, so only an induction head can give it; the corrupted text replaces
the first copy, so nothing earlier says what comes next. digits: the tiny sorter writes the smallest digit first; the
corrupted text raises every copy of it. names: indirect object identification (Wang et al. 2023): two people, the
second mention of one of them gives something "to" the other, whose name is the answer; the corrupted text is the
ABC form, the repeated name replaced by a third, so nothing says which of the first two is the indirect object. It
takes the tokenizer as two functions (this module reads no model): `one(" Mary")` is true when that is one known
token, `count(text)` is a text's token count; it is offered where at least MIN_NAMES of FIRST_NAMES are one token,
and a pair whose texts differ in token count is not produced. years: the date model `seq2seq-transformer` writes
ISO 8601 (2045-06-17), one character per token, so the first token it writes is the year's first digit; the
corrupted source moves the year by a century (2045 -> 1945), as many characters, so that digit is the one thing
that changes; clean years alternate between the 2000s and the 1900s. All are the same lists every run (a fixed
seed); from_csv reads your own.
"""
from __future__ import annotations

import io
import random
from collections.abc import Callable

from data.induction import VOCAB
from limits.errors import UserError

COLUMNS = ["clean", "corrupt", "answer", "wrong"]

NAMES = ["total", "x", "result", "items", "value", "count", "y", "best"]
CALLS = ["sum", "len", "max", "min", "sorted", "list", "str", "int"]
ARGS = ["values", "data", "a", "b"]


def brackets(n: int) -> list[tuple[str, str, str, str]]:
    """n pairs from fixed names, distinct up to 64."""
    combos = [(NAMES[i % 8], CALLS[(i + i // 8) % 8], ARGS[(i + i // 4) % 4]) for i in range(n)]
    return [(f"{v} = {f}({a}", f"{v} = {f}[{a}", ")", "]") for v, f, a in combos]


def repeats(n: int, seg: int = 10, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """n pairs of `seg` random syllables and the first seg // 2 of them again; the corrupted text's first copy is
    other syllables."""
    rng, pairs = random.Random(seed), []
    for _ in range(n):
        ids = rng.sample(range(len(VOCAB)), 2 * seg + 1)
        first, other, wrong = ids[:seg], ids[seg:2 * seg], ids[2 * seg]
        again = first[:seg // 2]
        pairs.append((" ".join(VOCAB[i] for i in first + again), " ".join(VOCAB[i] for i in other + again),
                      VOCAB[first[seg // 2]], VOCAB[wrong]))
    return pairs


def digits(n: int, length: int = 5, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """n pairs for the tiny sorter: its first output digit is the smallest input digit; the corrupted text raises
    every copy of that digit, so the smallest is another. ('82421', '82426', '1', '2')"""
    rng, pairs = random.Random(seed), []
    while len(pairs) < n:
        clean = [rng.randrange(10) for _ in range(length)]
        low = min(clean)
        if low == 9:
            continue
        corrupt = [d if d != low else rng.randrange(low + 1, 10) for d in clean]
        pairs.append(("".join(map(str, clean)), "".join(map(str, corrupt)), str(low), str(min(corrupt))))
    return pairs


YEAR_FORMATS = ("{d} {m} {y}", "{m} {d}, {y}", "{o} of {m} {y}", "the {o} of {m}, {y}")


def years(n: int, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """n distinct pairs (clean source, corrupted source, the clean year's first digit, the corrupted one's) for the
    date model: a day of a month in lower case in one of YEAR_FORMATS; even pairs' clean year in 2000-2099 and
    its corruption 100 years earlier, odd pairs the other way round. Days up to 28, so every date exists in both."""
    from data.dates import MONTHS, ordinal

    rng, pairs = random.Random(seed), {}
    while len(pairs) < n:
        day, month, yy = rng.randint(1, 28), rng.choice(MONTHS), rng.randrange(100)
        clean, corrupt = (2000 + yy, 1900 + yy) if len(pairs) % 2 == 0 else (1900 + yy, 2000 + yy)
        form = rng.choice(YEAR_FORMATS)
        text = [form.format(d=day, o=ordinal(day), m=month, y=y) for y in (clean, corrupt)]
        pairs.setdefault((*text, str(clean)[0], str(corrupt)[0]), None)
    return list(pairs)


FIRST_NAMES = ("Mary", "John", "Tom", "James", "Anna", "Paul", "Sarah", "David", "Lisa", "Mark", "Emma", "Michael",
               "Kate", "Daniel", "Laura", "Peter")
PLACES = ("store", "park", "school", "garden", "office", "station", "river", "house")
OBJECTS = ("drink", "book", "ball", "letter", "ring", "bag", "key", "gift")
TEMPLATES = ("When {a} and {b} went to the {place}, {s} gave a {obj} to",
             "After {a} and {b} went to the {place}, {s} gave a {obj} to",
             "While {a} and {b} were working at the {place}, {s} gave a {obj} to",
             "Then, {a} and {b} had a long day at the {place}. {s} gave a {obj} to")
MIN_NAMES = 4  # the names task is offered where the tokenizer reads at least this many as one token each
NAMES_TASK = "names: the indirect object, the person given to (IOI, Wang et al. 2023), against a third name"


def one_token_names(one: Callable[[str], bool]) -> list[str]:
    """The FIRST_NAMES whose form with a leading space is one known token: one(" Mary") -> True keeps "Mary"."""
    return [name for name in FIRST_NAMES if one(" " + name)]


def names(n: int, one: Callable[[str], bool], count: Callable[[str], int], seed: int = 0
          ) -> list[tuple[str, str, str, str]]:
    """Up to n distinct pairs (clean, corrupt, " IO", " S"): the subject S is named twice, the indirect object IO
    once, in either order (ABBA and BABA); the corrupted text names a third person C in S's second place. Pairs whose
    texts count differently are skipped; ValueError with one sentence where fewer than MIN_NAMES names are one token,
    or where no pair lines up."""
    usable = one_token_names(one)
    if len(usable) < MIN_NAMES:
        raise UserError(f"The names task needs at least {MIN_NAMES} first names that this tokenizer reads as one "
                         f"token each (with a leading space), and it reads {len(usable)}: pick a model with a "
                         "word-level vocabulary such as GPT-2's, or another task.")
    rng, pairs = random.Random(seed), {}
    for _ in range(20 * n):
        if len(pairs) == n:
            break
        io, s, c = rng.sample(usable, 3)
        words = dict(place=rng.choice(PLACES), obj=rng.choice(OBJECTS))
        a, b = (io, s) if rng.random() < 0.5 else (s, io)
        template = rng.choice(TEMPLATES)
        clean, corrupt = template.format(a=a, b=b, s=s, **words), template.format(a=a, b=b, s=c, **words)
        if count(clean) == count(corrupt):
            pairs.setdefault((clean, corrupt, " " + io, " " + s), None)
    if not pairs:
        raise UserError("No names pair lines up token by token in this tokenizer: use pairs of your own (a CSV).")
    return list(pairs)


BUILT_IN = {"gpt": (brackets, "brackets: an opened ( is closed by ), an opened [ by ]"),
            "induction": (repeats, "repeated random syllables: the syllable that followed the earlier copy"),
            "tiny": (digits, "sorting digits: the first digit written is the smallest one read"),
            "seq2seq-transformer": (years, "dates to ISO 8601: the first digit written is the year's, 2 for 2045 "
                                           "and 1 for 1945")}


def from_csv(data: bytes, n: int, max_bytes: int) -> list[tuple[str, str, str, str]]:
    """The first n rows of a CSV whose columns are clean, corrupt, answer, wrong (text kept as written, leading
    spaces too), or ValueError with one sentence for a file that is too large, unreadable, wrongly headed or empty."""
    import pandas as pd

    if len(data) > max_bytes:
        raise UserError(f"This file is {len(data):,} bytes, over the {max_bytes:,} read here: send fewer pairs.")
    try:
        table = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        raise UserError("This file is not a CSV of pairs: give the columns clean, corrupt, answer, wrong.") from None
    if list(table.columns[:4]) != COLUMNS:
        raise UserError(f"The CSV's columns are {', '.join(map(str, table.columns[:4])) or 'none'}: give clean, "
                         "corrupt, answer, wrong, in that order.")
    if table.empty:
        raise UserError("The CSV has no pairs under its header: add rows of clean, corrupt, answer, wrong.")
    return [tuple(row) for row in table[COLUMNS].head(n).itertuples(index=False)]
