"""Exports parse back, with ordinary readers, to exactly the trace's numbers and tokens."""
import csv
import io
import json

import numpy as np

from analysis.trace import AttentionTrace
from ui.export import CSV_COLUMNS, from_json, to_csv, to_json, to_npz

TOKENS = ["[CLS]", "the", 'say "hi", ok', "the", "é\nx", "[SEP]"]  # repeats, quotes, comma, newline, accent
KEYS = ["k0", "k,1", "<b>k2</b>"]


def _trace():
    w = np.random.default_rng(3).random((2, 3, len(TOKENS), len(KEYS))).astype(np.float32)
    return AttentionTrace(TOKENS, KEYS, w / w.sum(-1, keepdims=True), "cross", "out", ("a notice",))


def test_npz_reads_back_without_pickle():
    tr = _trace()
    with np.load(io.BytesIO(to_npz(tr)), allow_pickle=False) as f:
        assert f["weights"].dtype == np.float32 and np.array_equal(f["weights"], tr.weights)
        assert f["tokens"].tolist() == TOKENS and f["key_tokens"].tolist() == KEYS and str(f["kind"]) == "cross"


def test_tidy_csv_has_one_row_per_weight_and_the_same_numbers():
    tr = _trace()
    rows = list(csv.DictReader(io.StringIO(to_csv(tr))))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == tr.weights.size
    back = np.zeros_like(tr.weights)
    for r in rows:
        l, h, q, k = int(r["layer"]), int(r["head"]), int(r["query_index"]), int(r["key_index"])
        assert r["query_token"] == TOKENS[q] and r["key_token"] == KEYS[k]
        back[l, h, q, k] = np.float32(r["weight"])
    assert np.array_equal(back, tr.weights)


def test_json_round_trip_is_exact():
    tr = _trace()
    text = to_json(tr)
    assert json.loads(text)["kind"] == "cross"
    back = from_json(text)
    assert np.array_equal(back.weights, tr.weights)
    assert (back.tokens, back.key_tokens, back.output, back.notices) == (TOKENS, KEYS, "out", ("a notice",))
