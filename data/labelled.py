"""A user's labelled rows from CSV, TSV or JSONL: columns, labels and what was left out, one sentence each.

    read_table(b"text,label\\nfine,pos\\n", "a.csv", 1000).rows -> [{"text": "fine", "label": "pos"}]
    examples(table, "text", "label", names=["neg", "pos"]).labels -> [1]

Labels come in four kinds, following the model's head: "class" (one label per row: its name, or its
number), "tags" (space-separated, one per whitespace-separated word of the text), "span" (an answer
that occurs in the pair column, the context) and "none" (language models: the text is its own label).
Reads and checks only; knows nothing of models (the label names come from the caller).
Does not read Excel, guess encodings other than UTF-8 (a byte-order mark is dropped) or fix labels.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from data.text import csv_rows
from limits.errors import UserError

KINDS = ("class", "tags", "span", "none")
TEXT_NAMES = ("text", "sentence", "sentence1", "review", "content", "question", "premise", "tokens")
PAIR_NAMES = ("text_pair", "sentence2", "context", "hypothesis")
LABEL_NAMES = ("label", "labels", "tags", "ner_tags", "answer", "answers", "target")


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[dict[str, str]]   # every cell as text ("" when the row had none)


@dataclass(frozen=True)
class Examples:
    texts: list[str]
    pairs: list[str] | None      # second text of each row (a context for "span"), or None
    labels: list                 # class ids, tag-id lists, answer strings, or Nones ("none")
    rows: list[int]              # each example's row in the file, from 1 (for messages)
    notices: tuple[str, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.texts)

    def take(self, index: list[int]) -> Examples:
        """The examples at `index`, in that order."""
        pick = lambda xs: [xs[i] for i in index]  # noqa: E731
        return Examples(pick(self.texts), pick(self.pairs) if self.pairs is not None else None,
                        pick(self.labels), pick(self.rows), self.notices)


def _rows_text(rows: list[int]) -> str:
    """[3, 8, 9, 12, 20, 31] -> 'rows 3, 8, 9, 12, 20 and 1 more'"""
    shown = ", ".join(map(str, rows[:5]))
    return f"row{'s' if len(rows) > 1 else ''} {shown}" + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")


def read_table(data: bytes, name: str, limit: int) -> Table:
    """A file's bytes -> Table; .jsonl/.json as JSON objects, .tsv with tabs, anything else as CSV (, ; or tab).

    ValueError with one sentence for a file over `limit` bytes, not UTF-8, without a header or rows."""
    if len(data) > limit:
        raise UserError(f"The file has {len(data):,} bytes; labelled files are read up to {limit:,} bytes here: "
                        "keep fewer rows.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError("The file is not UTF-8 text: save it as UTF-8 CSV or JSONL and upload it again.") from None
    if "\x00" in text:
        raise UserError("The file holds binary data: give a CSV (a header row, then one row per example) or JSONL.")
    lower = name.lower()
    table = _json(text) if lower.endswith((".jsonl", ".json", ".ndjson")) else _csv(text, lower.endswith(".tsv"))
    if not table.rows:
        raise UserError("The file has no rows under its header: add one row per example.")
    return table


def _csv(text: str, tabs: bool) -> Table:
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise UserError("The file is empty or its first line is blank: start with a header such as text,label.")
    delimiter = "\t" if tabs else max(",;\t", key=lines[0].count)
    reader = iter(csv_rows(text, delimiter))
    header = [h.strip() for h in next(reader)]
    if len(set(header)) < len(header) or not all(header):
        raise UserError(f"The header ({', '.join(header)[:200]}) has an empty or repeated column name: "
                        "give every column its own name.")
    rows = [{h: (cells[i] if i < len(cells) else "") for i, h in enumerate(header)} for cells in reader if cells]
    return Table(header, rows)


def _parse(raw: str, line: int):
    try:
        return json.loads(raw)
    except json.JSONDecodeError as err:
        raise UserError(f"The file is not JSON Lines (line {line + err.lineno - 1}: {err.msg}): give one JSON "
                        'object per line, such as {"text": "...", "label": "..."}.') from None


def _json(text: str) -> Table:
    stripped = text.strip()
    items = _parse(stripped, 1) if stripped.startswith("[") else [
        _parse(raw, n) for n, raw in enumerate(stripped.splitlines(), start=1) if raw.strip()]
    bad = [i + 1 for i, item in enumerate(items) if not isinstance(item, dict)]
    if bad:
        raise UserError(f"Every line must be a JSON object with named fields; {_rows_text(bad)} are not.")
    columns = list(dict.fromkeys(k for item in items for k in item))
    cell = lambda v: "" if v is None else " ".join(map(str, v)) if isinstance(v, list) else str(v)  # noqa: E731
    return Table(columns, [{c: cell(item.get(c)) for c in columns} for item in items])


def guess(columns: list[str], names: tuple[str, ...], default: str | None = None) -> str | None:
    """The first column whose lower-cased name is in `names`, else `default`. (['Text', 'y'], TEXT_NAMES) -> 'Text'"""
    by_lower = {c.lower(): c for c in columns}
    return next((by_lower[n] for n in names if n in by_lower), default)


def _label_id(value: str, names: list[str]) -> int | None:
    """'positive' / 'Positive' / '1' -> its index in names; None when it is none of them."""
    if value in names:
        return names.index(value)
    lower = [n.lower() for n in names]
    if value.lower() in lower:
        return lower.index(value.lower())
    if value.lstrip("-").isdigit() and 0 <= int(value) < len(names):
        return int(value)
    return None


def examples(table: Table, text: str, label: str | None, pair: str | None = None, kind: str = "class",
             names: list[str] | None = None, max_rows: int | None = None, seed: int = 0) -> Examples:
    """Rows -> Examples for a head of `kind`; ValueError with one sentence for a missing column or unknown labels.

    Rows with an empty text (or label, or context) are skipped with a notice; beyond `max_rows`, a fixed
    random sample of that many rows (in file order) is kept, with a notice."""
    if kind not in KINDS:
        raise UserError(f"Unknown label kind {kind!r}: one of {', '.join(KINDS)}.")
    wanted = [c for c in (text, pair, label if kind != "none" else None) if c is not None]
    missing = [c for c in wanted if c not in table.columns]
    if missing:
        raise UserError(f"The file has no column {', '.join(repr(m) for m in missing)}: "
                        f"its columns are {', '.join(table.columns)[:300]}.")
    if kind == "span" and pair is None:
        raise UserError("A question-answering head needs a context column besides the question and the answer.")
    notices, keep, empty = [], [], []
    for i, row in enumerate(table.rows, start=1):
        (keep if all(row[c].strip() for c in wanted) else empty).append(i)
    if not keep:
        raise UserError(f"Every row has an empty {' or '.join(repr(c) for c in wanted)}: fill them in.")
    if empty:
        notices.append(f"Skipped {len(empty)} row{'s' if len(empty) > 1 else ''} with an empty "
                       f"{' or '.join(repr(c) for c in wanted)} ({_rows_text(empty)}).")
    rows = [table.rows[i - 1] for i in keep]
    texts = [r[text].strip() for r in rows]
    pairs = [r[pair].strip() for r in rows] if pair is not None else None
    # every usable row's label is checked, not only the sample's: an error counts the whole file
    labels = _labels([r[label] if kind != "none" else "" for r in rows], texts, pairs, keep, kind, names or [])
    if max_rows is not None and len(keep) > max_rows:
        notices.append(f"Used {max_rows:,} of {len(keep):,} rows, a fixed random sample (seed {seed}): "
                       f"one run here reads at most {max_rows:,} rows.")
        chosen = sorted(random.Random(seed).sample(range(len(keep)), max_rows))  # the same rows as sampling keep
        keep, texts, labels = [keep[i] for i in chosen], [texts[i] for i in chosen], [labels[i] for i in chosen]
        pairs = [pairs[i] for i in chosen] if pairs is not None else None
    return Examples(texts, pairs, labels, keep, tuple(notices))


def _labels(cells: list[str], texts: list[str], pairs: list[str] | None, rows: list[int], kind: str,
            names: list[str]) -> list:
    """Label cells -> what the head's loss takes; ValueError naming the first offending rows."""
    if kind == "none":
        return [None] * len(cells)
    if kind == "span":
        bad = [r for c, p, r in zip(cells, pairs, rows) if c.strip() not in p]
        if bad:
            raise UserError(f"The answer must occur word for word in the context; it does not in {_rows_text(bad)}.")
        return [c.strip() for c in cells]
    unknown: dict[str, list[int]] = {}
    out = []
    for cell, words, row in zip(cells, texts, rows):
        values = cell.split() if kind == "tags" else [cell.strip()]
        if kind == "tags" and len(values) != len(words.split()):
            raise UserError(f"Row {row} has {len(words.split())} words but {len(values)} tags: "
                            "give one tag per space-separated word.")
        ids = [_label_id(v, names) for v in values]
        for v, i in zip(values, ids):
            if i is None:
                unknown.setdefault(v, []).append(row)
        out.append(ids if kind == "tags" else ids[0])
    if unknown:
        shown = ", ".join(f"{v[:40]!r} ({_rows_text(r)})" for v, r in list(unknown.items())[:3])
        more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        raise UserError(f"Labels {shown}{more} are not among the model's labels "
                        f"({', '.join(names)[:200]}): use those names or their numbers 0–{len(names) - 1}.")
    return out


def split(ex: Examples, score_share: float = 0.5, seed: int = 0) -> tuple[Examples, Examples]:
    """(rows that score importance, held-out rows that measure the metric): a fixed shuffle cut at score_share.
    ValueError when either side would have fewer than 2 rows."""
    n_score = int(round(score_share * len(ex)))
    if n_score < 2 or len(ex) - n_score < 2:
        raise UserError(f"{len(ex)} usable rows are too few: give at least 4, so that 2 score the heads and "
                        "2 others measure the metric.")
    order = list(range(len(ex)))
    random.Random(seed).shuffle(order)
    return ex.take(sorted(order[:n_score])), ex.take(sorted(order[n_score:]))
