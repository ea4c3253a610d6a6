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


def test_no_install_runs_while_installs_are_paused(tmp_path):
    """An install() started inside installs_paused() hooks nothing until the block ends, then hooks every site."""
    m = models.load("hf:" + save("qwen3", "causal", tmp_path))
    sites = head_sites(m)
    assert not any(getattr(s.proj, "_head_gate_hooked", False) for s in sites)
    with gates.installs_paused():
        worker = threading.Thread(target=gates.install, args=(m,))
        worker.start()
        worker.join(2.0)   # an install that did not wait hooks a 2-layer model in milliseconds
        assert worker.is_alive()
        assert not any(getattr(s.proj, "_head_gate_hooked", False) for s in sites)
    worker.join()
    assert all(getattr(s.proj, "_head_gate_hooked", False) for s in sites)
