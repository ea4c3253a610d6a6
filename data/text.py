"""Text a user pastes or uploads, as non-empty lines, capped in bytes, with one sentence when it cannot be read.

    read_upload(b"a\n\nb\n", limit=1000) -> (["a", "b"], None)

Used by the BPE view's corpus and the corpus view; it never decodes more than `limit` bytes.
"""
from __future__ import annotations


def read_text(text: str, limit: int) -> tuple[list[str], str | None]:
    """Pasted text -> (non-empty lines, notice or None), capped like an upload."""
    return read_upload(text.encode("utf-8"), limit)


def read_upload(data: bytes, limit: int) -> tuple[list[str], str | None]:
    """A file's bytes -> (non-empty lines, notice or None); over `limit` bytes it is cut at a line end.

    Raises ValueError when the file is not UTF-8 text. Never decodes more than `limit` bytes.
    """
    head = data[:limit]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as err:
        if len(data) <= limit or err.reason != "unexpected end of data":
            raise ValueError(
                "The file is not UTF-8 text: save it as plain UTF-8 text (.txt) and upload it again."
            ) from None
        text = head[: err.start].decode("utf-8")  # the cap fell inside a character
    notice = None
    if len(data) > limit:
        text = text[: text.rfind("\n")] if "\n" in text else text
        kept = len(text.encode("utf-8"))
        notice = f"Used the first {kept:,} bytes of {len(data):,}: the text is capped at {limit:,} bytes."
    return [line for line in text.splitlines() if line.strip()], notice
