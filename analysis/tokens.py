"""Token strings as a person reads them, for labels: byte-level stand-ins decoded, whitespace made visible.

Tokenizers write tokens in their own notation. GPT-2's byte-level BPE gives every byte a printable stand-in,
so a space is written 'Ġ', a newline 'Ċ' and 'é' (two bytes) 'Ã©'; SentencePiece marks a word start '▁'; a
character-level model has a bare ' '. `readable` turns one token into what it spells, with whitespace shown:

    'Ġbank' -> '␣bank'   'Ċ' -> '⏎'   'ĠcafÃ©' -> '␣café'   '▁cat' -> '␣cat'   ' ' -> '␣'   '##ing' -> '##ing'

A token is read as byte-level only when its stand-ins spell valid UTF-8 without control characters other than
tab and newline: a WordPiece 'é' (byte 0xE9 alone) or 'ł', 'ę', 'č' (stand-ins of 0xA0, 0x19, 0x0D) stay as
written. Labels only: traces and exports keep the tokens exactly as the tokenizer wrote them, and nothing here
re-tokenises anything.
"""
from __future__ import annotations

from functools import lru_cache

WHITESPACE = {" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍"}
_ALLOWED_CONTROLS = frozenset("\t\n")  # what byte-level stand-ins may spell besides printable text


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-ins for bytes, reversed: 'Ġ' -> 32 (space), 'Ã' -> 195."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    stand_ins, extra = {}, 0
    for b in range(256):
        if b in printable:
            stand_ins[chr(b)] = b
        else:
            stand_ins[chr(256 + extra)] = b
            extra += 1
    return stand_ins


def token_bytes(token: str) -> bytes:
    """A byte-level token's bytes: 'ĠcafÃ©' -> b' caf\\xc3\\xa9'"""
    table = byte_decoder()
    return bytes(table[ch] for ch in token)


def _control(ch: str) -> bool:
    return (ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0) and ch not in _ALLOWED_CONTROLS


def byte_level_text(token: str) -> str | None:
    """What a GPT-2 byte-level token spells, or None when it is not one: 'ĠcafÃ©' -> ' café', 'the' -> 'the',
    'é' -> None (byte 0xE9 alone is not UTF-8), 'ę' -> None (it would spell a control character)."""
    table = byte_decoder()
    if not token or any(ch not in table for ch in token):
        return None
    try:
        text = token_bytes(token).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if any(_control(ch) for ch in text) else text


def show_whitespace(text: str) -> str:
    """Whitespace and control characters made visible: ' a\\n' -> '␣a⏎', '\\x07' -> '\\\\x07'."""
    return "".join(WHITESPACE.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 32 or ord(ch) == 0x7F else ch)
                   for ch in text)


def readable(token: str) -> str:
    """One token as a label: 'Ġbank' -> '␣bank', 'Ċ' -> '⏎', '▁cat' -> '␣cat', ' ' -> '␣', '[CLS]' -> '[CLS]'."""
    text = byte_level_text(token)
    return show_whitespace((token if text is None else text).replace("▁", " "))


def _stand_in(token: str) -> bool:
    """A token that spells its text with byte-level stand-ins: 'Ġbank' -> True, 'bank' -> False, 'é' -> False."""
    text = byte_level_text(token)
    return text is not None and text != token


def readable_all(tokens: list[str]) -> list[str]:
    """Labels of one sequence: ['<s>', 'The', 'Ġb', 'an', 'k', 'Ċ'] -> ['<s>', 'The', '␣b', 'an', 'k', '⏎'].

    In a sequence that is byte-level (some token spells its text with stand-ins, as 'Ġb' does), a piece of a
    character cut between tokens shows its bytes: 'Ã', '¯' (the two bytes of 'ï') -> '\\xc3', '\\xaf'."""
    if not any(_stand_in(t) for t in tokens):
        return [readable(t) for t in tokens]
    table = byte_decoder()
    return [show_whitespace(token_bytes(t).decode("utf-8", errors="backslashreplace"))
            if byte_level_text(t) is None and t and all(ch in table for ch in t) else readable(t) for t in tokens]
