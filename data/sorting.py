"""The tiny decoder's task as data: digit strings, their sorted answers, and token ids.

    "31415" -> prompt "31415=" and answer "11345."   (vocabulary "0123456789=.")

Strings come from seeded torch generators, so the same seed gives the same strings everywhere
(training in train/tiny.py, held-out scoring in experiments/sorting.py). No model code here.
"""
from __future__ import annotations

import torch

from limits.errors import UserError

VOCAB = "0123456789=."
SEP, END = VOCAB.index("="), VOCAB.index(".")
MAX_DIGITS = 10
HELDOUT_SEED = 2024  # the 2,000 held-out strings the shipped weights were measured on
SCORE_SEED = 11      # strings that score head importance, apart from the held-out ones


def uniform_strings(gen: torch.Generator, n: int) -> list[str]:
    """n strings of 1-10 uniform random digits, e.g. ['31415', '8', ...]"""
    lens = torch.randint(1, MAX_DIGITS + 1, (n,), generator=gen).tolist()
    digits = torch.randint(0, 10, (n, MAX_DIGITS), generator=gen).tolist()
    return ["".join(map(str, row[:L])) for row, L in zip(digits, lens)]


def training_strings(gen: torch.Generator, n: int) -> list[str]:
    """Uniform strings, 40% of them rewritten as few-distinct, constant, sorted or reverse-sorted."""
    out = uniform_strings(gen, n)
    kinds = torch.randint(0, 10, (n,), generator=gen).tolist()
    pools = torch.randint(0, 10, (n, 3), generator=gen).tolist()
    picks = torch.randint(0, 3, (n, MAX_DIGITS), generator=gen).tolist()
    for i, kind in enumerate(kinds):
        s = out[i]
        if kind in (0, 1):  # few distinct digits: many duplicates to count
            s = "".join(str(pools[i][p]) for p in picks[i][: len(s)])
        elif kind == 2:  # constant
            s = str(pools[i][0]) * len(s)
        elif kind == 3:
            s = "".join(sorted(s))
        elif kind == 4:
            s = "".join(sorted(s, reverse=True))
        out[i] = s
    return out


def strings(n: int, seed: int) -> list[str]:
    """n strings of 1-10 uniform random digits from `seed`, e.g. ['31415', '8', ...]"""
    return uniform_strings(torch.Generator().manual_seed(seed), n)


def held_out(n: int) -> list[str]:
    """The first n of the held-out strings the shipped weights' accuracy was measured on."""
    return strings(n, HELDOUT_SEED)


def batch(items: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """'31415' -> input '31415=11345' (padded with '.'), target: the answer and '.' only, else -1. (B, 21) each."""
    T = 2 * MAX_DIGITS + 1
    x = torch.full((len(items), T), END, dtype=torch.long)
    y = torch.full((len(items), T), -1, dtype=torch.long)
    for i, s in enumerate(items):
        n = len(s)
        seq = [int(c) for c in s] + [SEP] + sorted(int(c) for c in s) + [END]
        x[i, : 2 * n + 1] = torch.tensor(seq[:-1])
        y[i, n : 2 * n + 1] = torch.tensor(seq[n + 1 :])
    return x, y


def timing_ids(n: int = 16) -> list[list[int]]:
    """n ten-digit problems with their answers as token ids, all of one length (batches for timing)."""
    x, _ = batch([s.ljust(10, "0")[:10] for s in strings(n, SCORE_SEED + 1)])
    return x.tolist()


def encode(text: str) -> list[int]:
    """'31415' -> [3, 1, 4, 1, 5, 10]: the digits and the '=' that asks for the answer; ValueError with a sentence."""
    digits = "".join(text.split())
    if not digits:
        raise UserError("Type 1 to 10 digits for the tiny decoder to sort, for example 31415.")
    if not digits.isascii() or not digits.isdigit():
        raise UserError(f"The tiny decoder only sorts digits: type 1 to 10 digits such as 31415 (it answers 11345), "
                        f"not {text.strip()[:20]!r}.")
    if len(digits) > MAX_DIGITS:
        raise UserError(f"The tiny decoder was trained on at most {MAX_DIGITS} digits; you typed {len(digits)}: "
                        "shorten it, e.g. 31415.")
    return [VOCAB.index(c) for c in digits] + [SEP]
