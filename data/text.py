"""Reading a person's text: an uploaded file's bytes or pasted text -> lines, a CSV column, sentences.

One reader for every view that takes a corpus (BPE merges, Heads across a corpus). It decodes
UTF-8 only, never more than `limit` bytes, and refuses binary files (NUL bytes) and text in
another encoding with one sentence saying what to do. The caller passes the cap (limits
holds the laptop and hosted values): nothing here knows where it runs. It does not guess
encodings, detect languages or tokenise.

    read_upload(b"one\\n\\ntwo", 100)            -> (["one", "two"], None)
    split_sentences(["It rains. We stay in."])  -> ["It rains.", "We stay in."]
"""
from __future__ import annotations

import csv
import io
import re

from limits.errors import UserError

NOT_UTF8 = "The file is not UTF-8 text: save it as plain UTF-8 text (.txt or .csv) and upload it again."
BINARY = "The file holds binary data (NUL bytes), not text: upload a plain UTF-8 .txt or .csv file."
SENTENCE_END = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z0-9À-ÖØ-Þ])")


def decode(data: bytes, limit: int) -> tuple[str, str | None]:
    """The first `limit` bytes as text, cut at a line end when the file is longer, and a notice then.

    Raises ValueError when the file is binary or not UTF-8. Never decodes more than `limit` bytes.
    """
    head = data[:limit]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16, as some editors save "Unicode" text
        raise UserError(NOT_UTF8)
    if b"\x00" in head:
        raise UserError(BINARY)
    try:
        text = head.decode("utf-8").removeprefix("\ufeff")  # a UTF-8 byte-order mark is not text
    except UnicodeDecodeError as err:
        if len(data) <= limit or err.reason != "unexpected end of data":
            raise UserError(NOT_UTF8) from None
        text = head[: err.start].decode("utf-8")  # the cap fell inside a character
    notice = None
    if len(data) > limit:
        text = text[: text.rfind("\n")] if "\n" in text else text
        kept = len(text.encode("utf-8"))
        notice = f"Used the first {kept:,} bytes of {len(data):,}: uploads are capped at {limit:,} bytes."
    return text, notice


def read_upload(data: bytes, limit: int) -> tuple[list[str], str | None]:
    """A file's bytes -> (non-empty lines, notice or None); over `limit` bytes it is cut at a line end."""
    text, notice = decode(data, limit)
    return [line for line in text.splitlines() if line.strip()], notice


def read_text(text: str, limit: int) -> tuple[list[str], str | None]:
    """Pasted text -> (non-empty lines, notice or None), capped like an upload."""
    return read_upload(text.encode("utf-8"), limit)


def csv_rows(text: str, delimiter: str = ",") -> list[list[str]]:
    """CSV text -> its rows, read as leniently as the csv module reads; ValueError with one sentence for a field
    over the module's size limit, or a quote that is never closed (which the module reads silently as one cell
    holding the rest of the file). 'a,b\n"c,d\ne,f\n' -> ValueError naming line 2."""
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    rows, start, last = [], 1, 1
    try:
        for row in reader:
            rows.append(row)
            start, last = reader.line_num + 1, start
    except csv.Error as err:
        raise UserError(f"The CSV file could not be read ({str(err)[:80]}): save it as plain UTF-8 CSV.") from None
    if rows and reader.line_num > last:  # the last row spans lines: was its quote closed?
        try:
            list(csv.reader(io.StringIO("\n".join(text.split("\n")[last - 1:])), delimiter=delimiter, strict=True))
        except csv.Error as err:
            if "unexpected end of data" in str(err):
                raise UserError(f'The CSV file opens a quote (") on line {last:,} that is never closed, so the rest '
                                "of the file would be one cell: close the quote, or remove it.") from None
    return rows


def _rows(data: bytes, limit: int) -> tuple[list[list[str]], str | None]:
    text, notice = decode(data, limit)
    rows = [row for row in csv_rows(text) if any(cell.strip() for cell in row)]
    if not rows:
        raise UserError("The CSV file is empty: upload a file with a header row and one text per row.")
    return rows, notice


def csv_header(data: bytes, limit: int) -> list[str]:
    """The first row's column names ('column 1', ... where a name is blank)."""
    header = _rows(data, limit)[0][0]
    return [name.strip() or f"column {i + 1}" for i, name in enumerate(header)]


def read_csv_column(data: bytes, column: int, limit: int) -> tuple[list[str], str | None]:
    """The non-empty cells of column `column` (0-based) below the header, and the cap's notice."""
    rows, notice = _rows(data, limit)
    if not 0 <= column < len(rows[0]):
        raise UserError(f"The CSV file has no column {column + 1}: pick one of its {len(rows[0])} columns.")
    return [row[column] for row in rows[1:] if column < len(row) and row[column].strip()], notice


def split_sentences(lines: list[str]) -> list[str]:
    """Each line split after ., ! ? or … followed by a space and a capital or digit; blanks dropped.

    A plain rule, not a parser: "e.g. Python" splits; "3.5 m" and "U.S. law" do not.
    """
    out = []
    for line in lines:
        out += [s.strip() for s in SENTENCE_END.split(" ".join(line.split())) if s.strip()]
    return out
