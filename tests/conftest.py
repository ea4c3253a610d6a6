"""Shared fixtures. The repository root is on the path from pyproject.toml (pytest's pythonpath)."""
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _finite_differences(model, loss, batches, eps, n_layers=2, n_heads=4):
    """Mean over batches of |dL/d gate| by central differences, unnormalised -> [layers, heads]."""
    import numpy as np
    import torch

    from models.gates import gated

    fd = np.zeros((n_layers, n_heads))
    for batch in batches:
        for layer in range(n_layers):
            for h in range(n_heads):
                vals = []
                for sign in (1, -1):
                    g = [torch.ones(n_heads, dtype=torch.float64) for _ in range(n_layers)]
                    g[layer][h] += sign * eps
                    with torch.no_grad(), gated(model, g):
                        vals.append(float(loss(model, batch)))
                fd[layer, h] += abs(vals[0] - vals[1]) / (2 * eps) / len(batches)
    return fd


def _one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def one_thread():
    """One torch thread for this test (timing-free tests whose sums must not depend on the split), restored after."""
    yield from _one_thread()


@pytest.fixture(scope="module")
def one_thread_per_module():
    """One torch thread for a whole module of tiny models (one thread is faster than two fighting over a busy
    machine), restored after: `pytestmark = pytest.mark.usefixtures("one_thread_per_module")`."""
    yield from _one_thread()


@pytest.fixture
def bfloat16_here(monkeypatch):
    """models.load offers bfloat16 on this CPU, as on one with AVX512-BF16: a CPU without it would fall back to float32
    (models.devices: emulated bfloat16 is slower) and a test of bfloat16's rounding would test float32's instead."""
    from models import devices

    found = devices._torch_cpu_features()
    monkeypatch.setattr(devices, "_torch_cpu_features", lambda: found | {"avx512_bf16"})


@pytest.fixture
def finite_differences():
    """The independent path gradient importance is checked against."""
    return _finite_differences


@pytest.fixture(autouse=True, scope="session")
def _corpus_cache(tmp_path_factory):
    """Corpus statistics are cached in one folder of this test run (shared by xdist workers: writes are
    atomic), never in the user's cache."""
    root = tmp_path_factory.getbasetemp()
    folder = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "corpus-cache"
    folder.mkdir(exist_ok=True)
    os.environ["ATTENTION_EXPLORER_CACHE"] = str(folder)


@pytest.fixture(autouse=True, scope="session")
def _class_database(tmp_path_factory):
    """The Class view's answers go to a SQLite file of this test run's worker, never the user's."""
    os.environ["ATTENTION_EXPLORER_CLASSES"] = f"sqlite:///{tmp_path_factory.mktemp('classes') / 'classes.db'}"


@pytest.fixture(scope="session")
def classifier(tmp_path_factory):
    """The shipped 2-layer, 4-head BERT sentiment classifier (models/weights/classifier, `python -m train.classifier`)
    with its word-level tokenizer, copied to a folder of this session as a user's own would be: (its folder, 80
    labelled rows as CSV bytes). Never trained here: a model trained in the session follows this CPU's kernels."""
    import csv
    import io
    import shutil

    from data import reviews
    from models import WEIGHTS

    folder = tmp_path_factory.mktemp("classifier") / "classifier"
    shutil.copytree(WEIGHTS / "classifier", folder)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, ["text", "label"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(reviews.rows(80, seed=1))
    return folder, buf.getvalue().encode()


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory):
    """(family, **sizes) -> folder of a tiny random model of that family (bench.tiny_families.write, sizes overriding
    its SIZE, e.g. layers=1, positions=64), written once per session."""
    made = {}

    def get(name: str, **size: int) -> str:
        key = (name, *sorted(size.items()))
        if key not in made:
            from bench.tiny_families import write

            made[key] = str(write(name, tmp_path_factory.mktemp(name) / name, **size))
        return made[key]

    return get


APPTEST_HANG_GUARD_S = 3600  # an AppTest's timeout only guards against a hang: tests decide by the work, not the clock


@pytest.fixture(autouse=True, scope="session")
def _apptest_waits_for_the_work():
    """Every AppTest run waits at least APPTEST_HANG_GUARD_S: a script's timeout (3 s by default, or what a test
    passes) is a hang guard, so a loaded or slower machine waits for the same work instead of failing
    (tests/test_apptest_guard.py)."""
    from streamlit.testing.v1.app_test import AppTest

    run = AppTest._run

    def waiting(self, widget_state=None, timeout=None):
        wanted = self.default_timeout if timeout is None else timeout
        return run(self, widget_state, max(wanted, APPTEST_HANG_GUARD_S))

    AppTest._run = waiting
    yield
    AppTest._run = run
