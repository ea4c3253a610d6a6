"""data.text (the one upload reader) and data.corpus: caps, encodings, binary files, CSV columns, sentences."""
import pytest

from data import corpus, text

MB = 1_000_000


def test_ten_megabyte_upload_is_capped_at_a_line_end():
    line = "the river bank was dirty after the flood, café 🙂\n"
    data = (line * (10 * MB // len(line.encode()) + 1)).encode()
    lines, notice = text.read_upload(data, MB)
    assert len(data) > 10 * MB and notice and f"of {len(data):,}" in notice and "capped" in notice
    assert sum(len(x.encode()) + 1 for x in lines) <= MB
    assert len(lines) == MB // len(line.encode()) and set(lines) == {line.rstrip("\n")}


def test_cap_inside_a_multibyte_character_keeps_whole_characters():
    lines, notice = text.read_upload(("é" * 10 + "🙂" * 10).encode(), limit=13)
    assert notice and lines == ["é" * 6]
    lines, notice = text.read_text("ab\ncd\nef", limit=6)
    assert lines == ["ab", "cd"] and "6" in notice
    assert text.read_upload("\ufeffsmall\n\nfile".encode(), MB) == (["small", "file"], None)


def test_non_utf8_and_binary_uploads_say_how_to_fix_them():
    with pytest.raises(ValueError, match="UTF-8"):
        text.read_upload("café".encode("latin-1") + b" more text", MB)
    with pytest.raises(ValueError, match="UTF-8"):
        text.read_upload("small file ending in half an emoji 🙂".encode()[:-2], MB)
    with pytest.raises(ValueError, match="binary"):
        text.read_upload(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", MB)  # a PNG's first bytes are valid UTF-8


def test_sentences_split_at_ends_followed_by_a_capital():
    assert text.split_sentences(['He said "Go." Then he left.', "U.S. law is 3.5 m long.  ok", "  "]) == [
        'He said "Go."', "Then he left.", "U.S. law is 3.5 m long. ok"]


def test_csv_column_and_its_errors():
    data = b'id,sentence\n1,"The cat sat. It purred."\n2,\n3,"A, b and c."\n'
    assert text.csv_header(data, MB) == ["id", "sentence"]
    assert text.read_csv_column(data, 1, MB) == (["The cat sat. It purred.", "A, b and c."], None)
    with pytest.raises(ValueError, match="no column 3"):
        text.read_csv_column(data, 2, MB)
    with pytest.raises(ValueError, match="CSV"):
        text.read_csv_column(b"a\n" + b'"' + b"x" * 200_000 + b'"\n', 0, MB)  # over csv's field size limit
    with pytest.raises(ValueError, match="empty"):
        text.csv_header(b"\n ,\n", MB)


def test_corpus_from_bad_uploads_gets_one_sentence_each():
    caps = dict(max_bytes=MB, max_sentences=50, max_chars=200)
    c = corpus.from_upload("a.txt", b"\n\n  One line.\n\n\nTwo lines here.\n", **caps)
    assert c.sentences == ("One line.", "Two lines here.") and c.notices == ()
    giant = corpus.from_upload("giant.txt", ("word " * 30_000).encode(), **caps)  # one line, no sentence end
    assert len(giant.sentences) == 1 and len(giant.sentences[0]) == 200 and "cut" in giant.notices[0]
    many = corpus.from_upload("many.txt", ("Short one. " * 80).encode(), **caps)
    assert len(many.sentences) == 50 and "first 50 sentences of 80" in many.notices[0]
    for data, match in [(b"\n \n\t\n", "no text"), (b"\x00\x01\x02", "binary"), ("é".encode("utf-16"), "not UTF-8"),
                        ("Café crème.".encode("latin-1"), "not UTF-8")]:
        with pytest.raises(ValueError, match=match):
            corpus.from_upload("bad.txt", data, **caps)


def test_builtin_corpus_is_real_english_of_about_twenty_words_a_sentence():
    sentences = corpus.builtin().sentences
    assert len(sentences) >= 1000 and len(set(sentences)) == len(sentences)
    words = [len(s.split()) for s in sentences]
    assert 10 <= sum(words) / len(words) <= 25 and all(s[0].isupper() and s.endswith(".") for s in sentences)
    assert corpus.builtin(500).sentences == sentences[:500]


def test_a_csv_quote_never_closed_is_reported_not_read_as_one_sentence():
    import csv
    import io

    data = b'id,text\n1,The cat sat.\n2,"It purred.\n3,Dogs bark.\n4,Birds sing.\n'
    with pytest.raises(ValueError, match=r'opens a quote \(\"\) on line 3 that is never closed'):
        corpus.from_upload("notes.csv", data, column=1, max_bytes=MB, max_sentences=50, max_chars=200)
    fine = '1,"two\nlines, one cell"\n2,"a ""quoted"" word"\n3,5" screen\n'
    assert text.csv_rows(fine) == list(csv.reader(io.StringIO(fine)))  # what closes is read as the csv module does
