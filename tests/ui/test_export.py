"""Exports parse back, with ordinary readers, to exactly the trace's numbers and tokens."""
import csv
import io
import json

import numpy as np

import limits
from analysis.trace import AttentionTrace
from ui.export import CSV_COLUMNS, estimated_bytes, to_csv, to_json, to_npz

TOKENS = ["[CLS]", "the", 'say "hi", ok', "the", "é\nx", "[SEP]"]  # repeats, quotes, comma, newline, accent
KEYS = ["k0", "k,1", "<b>k2</b>"]


def _trace():
    w = np.random.default_rng(3).random((2, 3, len(TOKENS), len(KEYS))).astype(np.float32)
    return AttentionTrace(TOKENS, KEYS, w / w.sum(-1, keepdims=True), "cross", "out", ("a notice",))


def from_json(text: str) -> AttentionTrace:
    """The reader a notebook would write for to_json's file (the app never reads its own exports back)."""
    d = json.loads(text)
    return AttentionTrace(d["tokens"], d["key_tokens"], np.array(d["weights"], dtype=np.float32), d["kind"],
                          d["output"], tuple(d["notices"]))


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


def test_one_head_and_one_layer_read_back_with_their_indices():
    tr = _trace()
    rows = list(csv.DictReader(io.StringIO(to_csv(tr, 1, 2))))
    assert len(rows) == len(TOKENS) * len(KEYS) and {(r["layer"], r["head"]) for r in rows} == {("1", "2")}
    assert np.array_equal(np.array([np.float32(r["weight"]) for r in rows]).reshape(len(TOKENS), len(KEYS)),
                          tr.weights[1, 2])
    d = json.loads(to_json(tr, 1, 2))
    assert (d["layer"], d["head"]) == (1, 2) and np.array_equal(np.float32(d["weights"])[0, 0], tr.weights[1, 2])
    with np.load(io.BytesIO(to_npz(tr, 1)), allow_pickle=False) as f:
        assert np.array_equal(f["weights"], tr.weights[1:2]) and f["layers"].tolist() == [1]


def test_sizes_are_stated_before_building_and_bound_what_is_built():
    rng = np.random.default_rng(0)
    n = 400  # about the hosted text cap: the whole trace as CSV would be ~500 MB
    w = rng.dirichlet(np.ones(n), size=(6, 12, n)).astype(np.float32)
    tr = AttentionTrace([f"t{i}" for i in range(n)], [f"t{i}" for i in range(n)], w, "self")
    head_csv = estimated_bytes(tr, "head_csv")
    assert head_csv < 10e6
    assert abs(len(to_csv(tr, 3, 4)) - head_csv) < 0.25 * head_csv  # the stated size is about right
    assert len(to_npz(tr, 3)) <= estimated_bytes(tr, "layer_npz") < 10e6
    assert estimated_bytes(tr, "npz") > limits.HOSTED.export_bytes  # hosted offers one layer at a time
