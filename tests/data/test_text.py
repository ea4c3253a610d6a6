"""data.text: uploads and pasted text capped in bytes at a line or character end; one sentence for bad files."""
import pytest

from data.text import read_text, read_upload

LIMIT = 1_000_000


def test_ten_megabyte_upload_is_capped_at_a_line_end():
    line = "the river bank was dirty after the flood, café 🙂\n"
    data = (line * (10_000_000 // len(line.encode()) + 1)).encode()
    lines, notice = read_upload(data, LIMIT)
    assert len(data) > 10_000_000 and notice and f"of {len(data):,}" in notice
    assert sum(len(x.encode()) + 1 for x in lines) <= LIMIT
    assert len(lines) == LIMIT // len(line.encode()) and set(lines) == {line.rstrip("\n")}


def test_cap_inside_a_multibyte_character_keeps_whole_characters():
    lines, notice = read_upload(("é" * 10 + "🙂" * 10).encode(), limit=13)
    assert notice and lines == ["é" * 6]
    lines, notice = read_text("ab\ncd\nef", limit=6)
    assert lines == ["ab", "cd"] and "6" in notice
    assert read_upload(b"small\n\nfile", LIMIT) == (["small", "file"], None)


def test_non_utf8_upload_says_how_to_fix_it():
    with pytest.raises(ValueError, match="UTF-8"):
        read_upload("café".encode("latin-1") + b" more text", LIMIT)
    with pytest.raises(ValueError, match="UTF-8"):
        read_upload("small file ending in half an emoji 🙂".encode()[:-2], LIMIT)
