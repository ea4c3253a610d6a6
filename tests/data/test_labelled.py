"""Reading a user's labelled rows: CSV, TSV and JSONL, and one sentence for each thing wrong with them."""
import json

import pytest

from data.labelled import Examples, examples, read_table, split

NAMES = ["negative", "positive"]
GOOD = b"text,label\nthe film was good,positive\nthe meal was bad,negative\nnot bad at all,1\nawful,NEGATIVE\n"


def _one_sentence(message: str) -> None:
    assert "\n" not in message and message.endswith(".") and len(message) < 400, message
    assert "Traceback" not in message and "Error" not in message, message


def test_csv_tsv_and_jsonl_read_the_same_rows():
    want = examples(read_table(GOOD, "a.csv", 10_000), "text", "label", names=NAMES)
    assert want.labels == [1, 0, 1, 0] and want.rows == [1, 2, 3, 4] and want.notices == ()
    tsv = GOOD.replace(b",", b"\t")
    jsonl = "\n".join(json.dumps({"text": t, "label": lab}) for t, lab in zip(want.texts, ["positive", "negative",
                                                                                         1, "negative"]))
    for data, name in ((tsv, "a.tsv"), (jsonl.encode(), "a.jsonl"), (b"\xef\xbb\xbf" + GOOD.replace(b",", b";"),
                                                                     "semicolons.csv")):
        got = examples(read_table(data, name, 10_000), "text", "label", names=NAMES)
        assert (got.texts, got.labels) == (want.texts, want.labels), name


def test_tags_and_spans():
    tags = read_table(b"tokens,tags\nAnn met Bob,B O B\n", "t.csv", 1000)
    assert examples(tags, "tokens", "tags", kind="tags", names=["O", "B"]).labels == [[1, 0, 1]]
    qa = read_table(b"question,context,answer\nwho?,Ann met Bob,Bob\n", "q.csv", 1000)
    assert examples(qa, "question", "answer", "context", kind="span").labels == ["Bob"]
    lm = read_table(b"text\nsome words\n", "lm.csv", 1000)
    assert examples(lm, "text", None, kind="none").labels == [None]


BAD = {
    "missing column": (GOOD, "a.csv", dict(text="review"), "no column 'review': its columns are text, label"),
    "unknown labels": (GOOD + b"fine,neutral\nok,mixed\n", "a.csv", {}, "'neutral' (row 5), 'mixed' (row 6)"),
    "every row empty": (b"text,label\n,positive\n  ,\n", "a.csv", {}, "Every row has an empty"),
    "over the size cap": (GOOD * 100, "a.csv", {}, "bytes; labelled files are read up to 1,000 bytes"),
    "not UTF-8": ("text,label\ncafé,positive\n".encode("latin-1"), "a.csv", {}, "not UTF-8"),
    "binary": (b"PK\x03\x04\x00\x00text", "a.csv", {}, "binary data"),
    "bad JSON line": (b'{"text": "a", "label": "positive"}\n{"text": \n', "a.jsonl", {}, "not JSON Lines (line 2"),
    "JSON not objects": (b'["a", "b"]', "a.json", {}, "rows 1, 2 are not"),
    "header only": (b"text,label\n", "a.csv", {}, "no rows under its header"),
    "repeated column": (b"text,text\na,b\n", "a.csv", {}, "empty or repeated column name"),
    "tags do not fit": (b"text,label\nAnn met Bob,O O\n", "t.csv", dict(kind="tags"), "3 words but 2 tags"),
    "answer not in context": (b"text,ctx,label\nwho?,Ann met Bob,Carl\n", "q.csv", dict(kind="span", pair="ctx"),
                              "does not in row 1"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_files_get_one_sentence_each(case):
    data, name, kw, expected = BAD[case]
    with pytest.raises(ValueError) as err:
        table = read_table(data, name, 1000)
        examples(table, kw.pop("text", "text"), "label", kw.pop("pair", None), names=NAMES, **kw)
    assert expected in str(err.value)
    _one_sentence(str(err.value))


def test_empty_rows_and_too_many_rows_are_notices():
    data = GOOD + b",positive\nthe song was dull,\n" + b"the game was fine,positive\n" * 20
    ex = examples(read_table(data, "a.csv", 10_000), "text", "label", names=NAMES, max_rows=10)
    skipped, sampled = ex.notices
    assert skipped == "Skipped 2 rows with an empty 'text' or 'label' (rows 5, 6)."
    assert sampled.startswith("Used 10 of 24 rows, a fixed random sample (seed 0)")
    assert len(ex) == 10 and ex.rows == sorted(ex.rows) and 5 not in ex.rows
    assert examples(read_table(data, "a.csv", 10_000), "text", "label", names=NAMES, max_rows=10).rows == ex.rows
    for note in ex.notices:
        _one_sentence(note)


def test_split_is_fixed_and_disjoint():
    ex = Examples([f"t{i}" for i in range(9)], None, list(range(9)), list(range(1, 10)))
    score, held = split(ex)
    assert sorted(score.rows + held.rows) == ex.rows and len(score) == 4 and split(ex)[0].rows == score.rows
    with pytest.raises(ValueError, match="too few: give at least 4") as err:
        split(ex.take([0, 1, 2]))
    _one_sentence(str(err.value))


def test_the_sample_is_the_same_rows_and_unknown_labels_are_counted_over_every_row():
    import random

    rows = [f"review {i},{'positive' if i % 3 else 'negative'}" for i in range(1, 1001)]
    ex = examples(read_table(("text,label\n" + "\n".join(rows)).encode(), "a.csv", 10**6), "text", "label",
                  names=NAMES, max_rows=200)
    assert ex.rows == sorted(random.Random(0).sample(list(range(1, 1001)), 200))  # the sample as it always was
    assert ex.labels == [0 if r % 3 == 0 else 1 for r in ex.rows] and ex.texts == [f"review {r}" for r in ex.rows]
    odd = {row: f"odd{row}" for row in range(5, 1001, 40)}  # 25 unknown labels, one every 40 rows
    for row, value in odd.items():
        rows[row - 1] = f"review {row},{value}"
    table = read_table(("text,label\n" + "\n".join(rows)).encode(), "a.csv", 10**6)
    with pytest.raises(ValueError) as err:
        examples(table, "text", "label", names=NAMES, max_rows=200)
    unknown = list(dict.fromkeys(odd.values()))  # first seen, in file order: the reference count
    assert f"and {len(unknown) - 3} more are not among the model's labels" in str(err.value)
    assert f"{unknown[0]!r} (row 5)" in str(err.value)
    _one_sentence(str(err.value))


def test_a_quote_never_closed_is_one_sentence_naming_its_line():
    data = b'text,label\nfine,positive\n"broken,negative\nmore,positive\nlast,negative\n'
    with pytest.raises(ValueError) as err:
        read_table(data, "a.csv", 10_000)
    assert 'opens a quote (") on line 3 that is never closed' in str(err.value)
    _one_sentence(str(err.value))
    closed = read_table(b'text,label\n"two\nlines",positive\nx,negative\n', "a.csv", 10_000)
    assert closed.rows == [{"text": "two\nlines", "label": "positive"}, {"text": "x", "label": "negative"}]
