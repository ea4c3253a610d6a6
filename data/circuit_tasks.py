"""Built-in tasks for circuits, as pairs (clean, corrupt, answer, wrong) whose answer is known; no model code here.

    brackets(2)  -> [("total = sum(values", "total = sum[values", ")", "]"), ("x = len(data", ...)]
    repeats(1)   -> [("ra ri he bo ro ... ra ri", "zo ho la ... ra ri", "he", "go")]
    from_csv(b"clean,corrupt,answer,wrong\nba ke ba,mi ke ba,ke,lo\n") -> [("ba ke ba", "mi ke ba", "ke", "lo")]

brackets: an opened bracket is closed by its own kind (the built-in `gpt` read Python); the corrupted text opens
the other kind, as many tokens. repeats: random syllables of the induction model, then the first half of them again;
the answer is the syllable that followed there, so only an induction head can give it; the corrupted text replaces
the first copy, so nothing earlier says what comes next. digits: the tiny sorter writes the smallest digit first; the
corrupted text raises every copy of it. All are the same lists every run (a fixed seed); from_csv reads your own.
"""
from __future__ import annotations

import io
import random

from data.induction import VOCAB

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


BUILT_IN = {"gpt": (brackets, "brackets: an opened ( is closed by ), an opened [ by ]"),
            "induction": (repeats, "repeated random syllables: the syllable that followed the earlier copy"),
            "tiny": (digits, "sorting digits: the first digit written is the smallest one read")}


def from_csv(data: bytes, n: int, max_bytes: int) -> list[tuple[str, str, str, str]]:
    """The first n rows of a CSV whose columns are clean, corrupt, answer, wrong (text kept as written, leading
    spaces too), or ValueError with one sentence for a file that is too large, unreadable, wrongly headed or empty."""
    import pandas as pd

    if len(data) > max_bytes:
        raise ValueError(f"This file is {len(data):,} bytes, over the {max_bytes:,} read here: send fewer pairs.")
    try:
        table = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        raise ValueError("This file is not a CSV of pairs: give the columns clean, corrupt, answer, wrong.") from None
    if list(table.columns[:4]) != COLUMNS:
        raise ValueError(f"The CSV's columns are {', '.join(map(str, table.columns[:4])) or 'none'}: give clean, "
                         "corrupt, answer, wrong, in that order.")
    if table.empty:
        raise ValueError("The CSV has no pairs under its header: add rows of clean, corrupt, answer, wrong.")
    return [tuple(row) for row in table[COLUMNS].head(n).itertuples(index=False)]
