"""How the built-in `gpt` language models lay out a window of text, shared by their training script
(train/gpt.py) and the runtime that measures them (experiments/precision.py) exactly as they were trained.

    gpt        documents as "<s> text </s>"; window = <s> + 127 tokens (<s> at position 0 of every window)
    gpt-sink   documents as "text </s>"; window = <sink> + 127 tokens
    gpt-nobos  documents as "text </s>"; window = 128 tokens from an offset, nothing prepended

It tokenises with a given tokenizer and slices; it trains nothing and loads no model.
"""
from __future__ import annotations

import torch
from transformers import PreTrainedTokenizerFast

from data import python_reference

VARIANTS = {"bos": "gpt", "sink": "gpt-sink", "nobos": "gpt-nobos"}  # --variant -> folder / registry name
PAD, BOS, EOS, SINK = "<pad>", "<s>", "</s>", "<sink>"
CONTEXT = 128


def stream(tok: PreTrainedTokenizerFast, variant: str, docs: list[str]) -> list[int]:
    """Documents packed into one token list: '<s> a </s> <s> b </s>' for gpt, 'a </s> b </s>' otherwise."""
    bos, eos = tok.convert_tokens_to_ids(BOS), tok.convert_tokens_to_ids(EOS)
    out = []
    for doc in docs:
        ids = tok.backend_tokenizer.encode(doc, add_special_tokens=False).ids  # whole documents, longer than CONTEXT
        out += ([bos] if variant == "bos" else []) + ids + [eos]
    return out


def window(tokens: list[int], offset: int, variant: str, ids: dict[str, int]) -> list[int]:
    """One training sequence of CONTEXT tokens starting at `offset`, laid out as the variant is trained."""
    if variant == "nobos":
        return tokens[offset:offset + CONTEXT]
    if variant == "bos" and tokens[offset] == ids[BOS]:
        offset += 1  # a window at a document start holds one <s>, not two
    first = ids[BOS] if variant == "bos" else ids[SINK]
    return [first] + tokens[offset:offset + CONTEXT - 1]


def special_ids(tok: PreTrainedTokenizerFast) -> dict[str, int]:
    return {t: tok.convert_tokens_to_ids(t) for t in (PAD, BOS, EOS, SINK)}


def heldout_windows(tok: PreTrainedTokenizerFast, variant: str) -> torch.Tensor:
    """Non-overlapping windows over the held-out topics (alphabetical order), as trained. -> (N, CONTEXT)"""
    ids = special_ids(tok)
    tokens = stream(tok, variant, python_reference.documents("test"))
    step = CONTEXT if variant == "nobos" else CONTEXT - 1
    rows = [window(tokens, off, variant, ids) for off in range(0, len(tokens) - CONTEXT, step)]
    return torch.tensor(rows)  # (N, T)


def labels(x: torch.Tensor, ids: dict[str, int]) -> torch.Tensor:
    """Targets for the LM loss: the input itself, minus the tokens a layout puts there (<s>, <sink>)."""
    y = x.clone()
    y[(x == ids[BOS]) | (x == ids[SINK])] = -100
    return y

