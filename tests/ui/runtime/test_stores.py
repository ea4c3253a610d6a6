"""Every per-server store is one of ui.runtime.cache.STORES: no st.cache_resource / st.cache_data and no hand-made dict
left in ui/ or views/; each store survives two sessions building and evicting the same keys at once and stays
under its byte bound; kept() builds once and draws nothing on a hit (heavy work's bar: ui.runtime.heavy, tested
there); no code outside ui/runtime/cache.py names STORES (it reaches the stores through memo, kept and peek)."""
import ast
import threading
from pathlib import Path

import numpy as np
import pytest

import limits
from ui.runtime import cache

ROOT = Path(__file__).resolve().parents[3]
MB = 1 << 20


def test_no_store_outside_ui_cache():
    found = []
    for path in [*(ROOT / "ui").glob("*.py"), *(ROOT / "views").glob("*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("cache_resource", "cache_data", "cache"):
                if isinstance(node.value, ast.Name) and node.value.id == "st":
                    found.append(f"{path.name}:{node.lineno} st.{node.attr}")
        if "store.pop(next(iter(" in path.read_text():
            found.append(f"{path.name}: a hand-made store")
    assert found == []


# files being changed elsewhere that still name STORES; each leaves this list when it uses ui.runtime.cache.peek instead
PENDING: set[str] = set()


def test_no_code_outside_the_runtime_names_the_stores():
    """The app's code (everything but tests/, which inspect the runtime) reaches the stores through ui.runtime.cache's
    functions only: a hand-written STORES access skips memo's keys, the build lock's order and the spinners."""
    naming = set()
    for top in ROOT.iterdir():
        if top.name.startswith(".") or top.name == "tests":  # .venv, .git: not the app's code
            continue
        for path in [top] if top.suffix == ".py" else top.rglob("*.py") if top.is_dir() else []:
            rel = path.relative_to(ROOT).as_posix()
            if rel != "ui/runtime/cache.py" and "STORES" in path.read_text(encoding="utf-8"):
                naming.add(rel)
    assert naming - PENDING == set()
    assert PENDING <= naming, "a pending file no longer names STORES: take it off PENDING"


def test_no_view_imports_another_views_glue_for_its_store():
    for path in (ROOT / "views").glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert ("ui.pruning", "memo") not in names, path.name
    assert not hasattr(__import__("ui.pruning").pruning, "memo")


@pytest.mark.parametrize("name", sorted(cache.STORES))
def test_two_sessions_building_and_evicting_the_same_keys(name, monkeypatch):
    """A budget of 3 values, 8 keys asked for in opposite orders by two threads, 40 rounds: every answer is the
    key's own value, nothing raises, and the store is never over its bound."""
    store = cache.STORES[name]
    monkeypatch.setattr(store, "budget", lambda: 3 * MB + 1024)
    store.clear()
    errors, over, builds = [], [], []

    def build(k):
        builds.append(k)
        return np.full(MB, k, np.uint8)

    def session(order):
        try:
            for _ in range(40):
                for k in order:
                    value = store.get((name, "race", k), lambda k=k: build(k))
                    if value[0] != k or value.nbytes != MB:
                        errors.append(f"key {k} gave {value[0]}")
                    if store.nbytes > store.budget():
                        over.append(store.nbytes)
        except Exception as err:  # noqa: BLE001 - the test reports any failure of either session
            errors.append(repr(err))

    threads = [threading.Thread(target=session, args=(order,)) for order in (range(8), range(7, -1, -1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and over == []
    assert store.nbytes <= store.budget() and len(builds) >= 8  # they evicted (8 keys never fit 3)
    store.clear()


@pytest.mark.parametrize("name", sorted(cache.STORES))
def test_each_store_holds_its_byte_bound_from_limits(name, monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")
    store = cache.STORES[name]
    bound = store.budget()
    assert bound == {"models": limits.HOSTED.model_cache_bytes, "results": limits.HOSTED.result_cache_bytes}[name]
    monkeypatch.setattr(store, "budget", lambda: 5 * MB)
    store.clear()
    for i in range(12):
        store.put((name, "bound", i), np.zeros(2 * MB, np.uint8))
        assert store.nbytes <= 5 * MB
    assert len(store) == 2
    store.clear()


def test_kept_builds_once_and_counts_the_bytes_of_what_it_keeps(monkeypatch):
    calls = []
    store = cache.STORES["results"]
    store.clear()
    blob = cache.kept(("test-zip", 1), lambda: calls.append(1) or b"z" * MB)
    assert cache.kept(("test-zip", 1), lambda: calls.append(1) or b"") == blob and calls == [1]
    assert store.nbytes >= MB  # an export's zip is counted in the budget
    store.clear()
