"""The server's stores stay under their byte budgets, build each key once, and share results read-only."""
import threading
import time

import numpy as np
import pytest
import torch

import limits
from analysis.trace import AttentionTrace
from ui.runtime import cache

MB = 1 << 20


def test_least_recently_used_values_go_to_stay_under_the_budget():
    store = cache.ByteCache("results", lambda: 10 * MB)
    for i in range(4):
        store.put(i, np.zeros(3 * MB, np.uint8))
    assert store.nbytes <= 10 * MB and len(store) == 3  # 4 x 3 MB does not fit: the oldest went
    store.get(1, lambda: None)                            # 1 is used again, so 2 is now the oldest
    store.put("big", np.zeros(3 * MB, np.uint8))
    assert store._hit(1)[0] and not store._hit(2)[0] and store.nbytes <= 10 * MB


def test_a_value_over_the_whole_budget_is_returned_but_not_kept():
    store = cache.ByteCache("results", lambda: MB)
    value = store.get("huge", lambda: np.zeros(2 * MB, np.uint8))
    assert value.nbytes == 2 * MB and len(store) == 0 and store.nbytes == 0


def test_sizes_count_tensors_modules_and_traces_by_their_bytes():
    net = torch.nn.Linear(256, 256)
    assert cache.sizeof(net) == (256 * 256 + 256) * 4
    w = np.zeros((2, 3, 10, 10), np.float32)
    assert cache.sizeof(AttentionTrace(["a"] * 10, ["a"] * 10, w, "self")) >= w.nbytes
    shared = np.zeros(MB, np.uint8)
    assert cache.sizeof([shared, shared, shared[:10]]) < 2 * MB  # one array, counted once


def test_a_kept_closure_counts_what_it_captured_and_no_module():
    """A kept object with closures (experiments.precision's Probe) is as large as the tensors they hold; a module
    a closure names (a local import) is shared, never counted."""
    import experiments.paraphrase

    held = torch.zeros(MB // 4)  # 1 MB

    def outputs(m):
        return experiments.paraphrase, held, later

    assert MB <= cache.sizeof(outputs) < MB + 4096  # `later`: a cell not filled yet
    later = np.zeros(MB, np.uint8)
    assert 2 * MB <= cache.sizeof(outputs) < 2 * MB + 4096
    assert 2 * MB <= cache.sizeof({"probe": outputs, "again": outputs}) < 2 * MB + 4096  # counted once
    assert cache.sizeof(lambda: 1) < 4096


def test_kept_results_are_read_only_for_every_session():
    store = cache.ByteCache("results", lambda: 10 * MB)
    tr = store.get("t", lambda: AttentionTrace(["a", "b"], ["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32), "self"))
    with pytest.raises(ValueError, match="read-only"):
        tr.weights[0, 0, 0, 0] = 1.0


def test_concurrent_requests_for_one_key_build_it_once():
    store, builds = cache.ByteCache("models", lambda: 10 * MB), []

    def build():
        builds.append(1)
        time.sleep(0.2)  # long enough for the other threads to arrive while it builds
        return np.zeros(10, np.uint8)

    threads = [threading.Thread(target=store.get, args=("bert", build)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1


def test_errors_are_not_kept():
    store, calls = cache.ByteCache("results", lambda: MB), []

    def bad():
        calls.append(1)
        raise ValueError("Type a sentence.")

    for _ in range(2):
        with pytest.raises(ValueError):
            store.get("k", bad)
    assert len(calls) == 2 and len(store) == 0


def test_idle_values_are_dropped(monkeypatch):
    store = cache.ByteCache("results", lambda: 10 * MB)
    store.put("old", np.zeros(MB, np.uint8))
    later = time.monotonic() + cache.IDLE_S + 1
    monkeypatch.setattr(cache.time, "monotonic", lambda: later)
    store.put("new", np.zeros(10, np.uint8))
    assert not store._hit("old")[0] and store._hit("new")[0]


def test_budgets_come_from_limits_and_hosted_fits_the_memory_target(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")
    stats = cache.stats()
    assert stats["models"]["budget"] == limits.HOSTED.model_cache_bytes
    # the process (~0.6 GB with torch, transformers and streamlit) plus both stores stays under 1.5 GB
    assert 0.6e9 + limits.HOSTED.model_cache_bytes + limits.HOSTED.result_cache_bytes < 1.5e9


def test_memo_keys_arrays_by_content():
    calls = []

    @cache.memo("results")
    def total(w):
        calls.append(1)
        return float(w.sum())

    a = np.arange(6.0)
    assert total(a) == total(a.copy()) == 15.0 and len(calls) == 1
    assert total(a + 1) == 21.0 and len(calls) == 2


def test_memo_peek_finds_a_kept_result_without_computing_it():
    calls = []

    @cache.memo("results")
    def scaled(x, by=2):
        calls.append(x)
        return x * by

    assert scaled.peek(7) == (False, None) and calls == []
    assert scaled(7) == 14 and scaled.peek(7, by=2) == (True, 14) and scaled.peek(7, 3) == (False, None)
    assert calls == [7]


def test_memo_keep_makes_a_result_for_its_caller_alone_where_it_says_so():
    calls = []

    @cache.memo("results", keep=lambda x: x < 10)
    def doubled(x):
        calls.append(x)
        return 2 * x

    assert doubled(3) == 6 and doubled(3) == 6 and doubled.peek(3) == (True, 6)
    assert doubled(30) == 60 and doubled(30) == 60 and doubled.peek(30) == (False, None)
    assert calls == [3, 30, 30]  # the small one kept, the large one made for each caller


def test_memo_with_a_key_function_never_hashes_the_arguments_it_leaves_out():
    """A model argument (here a torch module whose weights differ between calls) is not part of the key: the key
    function says what identifies the result, and arrays in what it returns are still keyed by content."""
    calls = []

    @cache.memo("results", key=lambda net, name, w, progress=None: (name, w))
    def applied(net, name, w, progress=None):
        calls.append(name)
        return float(net(torch.as_tensor(w)).sum())

    net, other = torch.nn.Linear(3, 1), torch.nn.Linear(3, 1)
    w = np.ones((2, 3), np.float32)
    first = applied(net, "a", w)
    assert applied(other, "a", w.copy(), progress=print) == first and calls == ["a"]  # other's weights never read
    assert applied.peek(other, "a", w) == (True, first) and applied.peek(net, "b", w) == (False, None)
    assert applied.key(net, "a", w) == applied.key(other, "a", w.copy()) != applied.key(net, "a", w + 1)
    applied(net, "a", w + 1)
    assert calls == ["a", "a"]  # another array's content: another key


def test_peek_finds_what_kept_stored_and_builds_nothing():
    assert cache.peek(("test-peek", 1)) == (False, None)
    assert cache.kept(("test-peek", 1), lambda: 41 + 1) == 42
    assert cache.peek(("test-peek", 1)) == (True, 42) and cache.peek(("test-peek", 1), "models") == (False, None)


def test_a_quantized_model_is_sized_by_its_inner_tensors():
    """torchao's int8 weights are tensor subclasses whose own storage cannot be read: their int8 data and scales
    are counted instead (a precision variant kept in the model store)."""
    from models import variants

    net = torch.nn.Sequential(torch.nn.Linear(64, 64))
    q = variants.make(net, "int8_dynamic")
    assert q.variant == "int8_dynamic"
    assert cache.sizeof(q) == variants.model_bytes(q) < cache.sizeof(net)
