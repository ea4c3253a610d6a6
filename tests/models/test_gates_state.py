"""models.gates' two public readings of its state, for the modules that used to read its private names: editing()
(models.residual skips its first-split check while edits are in force) and installs_paused() (models.twin copies a
model's modules while no install can hook them half-way)."""
import threading

import torch

import models
from bench.tiny_any import save
from models import gates
from models.sites import head_sites


def test_editing_is_true_only_inside_an_edits_context(tmp_path):
    m = models.load("hf:" + save("qwen3", "causal", tmp_path))
    assert gates.editing() is False
    with gates.gated(m, torch.ones(m.n_layers, m.n_heads)):
        assert gates.editing() is True
        with gates.recorded(m):
            assert gates.editing() is True
        assert gates.editing() is True
    assert gates.editing() is False
    seen = []
    with gates.gated(m, torch.ones(m.n_layers, m.n_heads)):  # a context variable: another thread has its own
        worker = threading.Thread(target=lambda: seen.append(gates.editing()))
        worker.start()
        worker.join()
    assert seen == [False]


class _WatchedLock:
    """models.gates' install lock, telling when a thread asks for it (so a test waits on that, not on a clock)."""

    def __init__(self):
        self.lock, self.asked, self.got = threading.Lock(), threading.Event(), threading.Event()

    def __enter__(self):
        self.asked.set()
        self.lock.acquire()
        self.got.set()

    def __exit__(self, *exc):
        self.lock.release()


def test_no_install_runs_while_installs_are_paused(tmp_path, monkeypatch):
    """An install() started inside installs_paused() hooks nothing until the block ends, then hooks every site."""
    m = models.load("hf:" + save("qwen3", "causal", tmp_path))
    sites = head_sites(m)
    assert not any(getattr(s.proj, "_head_gate_hooked", False) for s in sites)
    watched = _WatchedLock()
    monkeypatch.setattr(gates, "_INSTALL", watched)
    with gates.installs_paused():
        watched.asked.clear()                    # the block itself asked and got it: from here on, only the worker
        watched.got.clear()
        worker = threading.Thread(target=gates.install, args=(m,))
        worker.start()
        watched.asked.wait()                     # the worker has asked for the lock: held by this block, not given
        assert watched.lock.locked() and not watched.got.is_set() and worker.is_alive()
        assert not any(getattr(s.proj, "_head_gate_hooked", False) for s in sites)
    worker.join()
    assert all(getattr(s.proj, "_head_gate_hooked", False) for s in sites)
