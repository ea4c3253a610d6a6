"""The induction model's task as data: random syllables in which a segment comes back later.

    vocabulary: 64 syllables, a consonant of "bdfghjklmnprstvz" then a vowel of "aeio": ba be bi bo da ... zo
    repeated(gen, 2) -> ids (2, 48), and per row where the segment is: first copy at a, repeat at b, length L

A training sequence is 48 uniform random syllables; a segment of L (8-24) of them, starting at a with a + L <= 24,
is written again at b, somewhere after it (a + L <= b <= 48 - L). Only the repeat is predictable: its tokens
after the first follow from the first copy. `twice` writes one random sequence twice (Olsson et al.'s test).
Seeded torch generators only, so one seed gives the same sequences everywhere. No model code here.
"""
from __future__ import annotations

import torch

from limits.errors import UserError

CONSONANTS, VOWELS = "bdfghjklmnprstvz", "aeio"
VOCAB = [c + v for c in CONSONANTS for v in VOWELS]  # 64 syllables, id = index
SEQ_LEN, MIN_SEG, MAX_SEG = 48, 8, 24
TRAIN_SEED, EVAL_SEED, TEXT_SEED = 0, 1, 2  # training batches, the scores' fresh sequences, the default text


def encode(text: str) -> list[int]:
    """'ba ke mi' -> [0, 25, 34]; ValueError with one sentence for an empty, unknown or too long input."""
    words = text.split()
    if not words:
        raise UserError("Type some syllables of the induction model's vocabulary, e.g. 'ba ke mi ba ke'.")
    unknown = [w for w in words if w not in VOCAB]
    if unknown:
        word = unknown[0] if len(unknown[0]) <= 12 else unknown[0][:12] + "…"
        raise UserError(
            f"'{word}' is not in the induction model's vocabulary: write syllables separated by spaces, "
            f"each a consonant of {CONSONANTS} then a vowel of {VOWELS} (e.g. ba ke mi).")
    if len(words) > SEQ_LEN:
        raise UserError(f"The induction model reads at most {SEQ_LEN} syllables; this text has {len(words)}.")
    return [VOCAB.index(w) for w in words]


def decode(ids: list[int]) -> str:
    """[0, 25, 34] -> 'ba ke mi'"""
    return " ".join(VOCAB[i] for i in ids)


def repeated(gen: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """n training sequences: ids (n, 48), and the first copy's start a, the repeat's start b, the length L (n,)."""
    ids = torch.randint(0, len(VOCAB), (n, SEQ_LEN), generator=gen)            # (n, T)
    L = torch.randint(MIN_SEG, MAX_SEG + 1, (n,), generator=gen)               # (n,)
    a = (torch.rand(n, generator=gen) * (SEQ_LEN // 2 - L + 1)).long()         # (n,) a + L <= 24
    b = a + L + (torch.rand(n, generator=gen) * (SEQ_LEN - 2 * L - a + 1)).long()  # (n,) a + L <= b <= 48 - L
    pos = torch.arange(SEQ_LEN)                                                # (T,)
    j = pos[None, :] - b[:, None]                                              # (n, T) offset into the repeat
    src = (a[:, None] + j).clamp(0, SEQ_LEN - 1)                               # (n, T)
    in_repeat = (j >= 0) & (j < L[:, None])                                    # (n, T)
    ids = torch.where(in_repeat, ids.gather(1, src), ids)                      # (n, T)
    return ids, a, b, L


def twice(n_tokens: int, seed: int = TEXT_SEED) -> str:
    """One random sequence of n_tokens syllables written twice, e.g. twice(3) -> 'po ga le po ga le'."""
    ids = torch.randint(0, len(VOCAB), (n_tokens,), generator=torch.Generator().manual_seed(seed)).tolist()
    return decode(ids + ids)


# A minimal pair for activation patching: the second 'ba' came before 'je' in the clean first copy and before 'zo'
# in the corrupted one, so an induction head must copy the syllable after the earlier 'ba': (clean, corrupt,
# answer, wrong answer).
PATCH_PAIR = ("pi ka ve bo va fa ba je ze ho fi po pi ka ve bo va fa ba",
              "pi ka ve bo va fa ba zo ze ho fi po pi ka ve bo va fa ba", "je", "zo")
