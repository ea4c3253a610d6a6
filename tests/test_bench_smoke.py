"""`python -m bench --smoke` runs every bench entry at its smallest size and fails when one errors, so a figure the
README quotes cannot stop being measured unnoticed (the Heads page's paint entries once failed for a round)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import FIGURES, SMOKE

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(1200)  # the smoke run's own limit is 900 s: it, not the test's, says when it hangs
def test_every_bench_entry_runs_at_its_smallest_size(tmp_path):
    out = tmp_path / "smoke.json"
    done = subprocess.run([sys.executable, "-m", "bench", "--smoke", "--json", str(out)], cwd=ROOT,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"), capture_output=True, text=True, timeout=900)
    figures = json.loads(out.read_text())
    failed = {name: figure["error"] for name, figure in figures.items() if "error" in figure}
    assert done.returncode == 0 and not failed, (failed, done.stdout[-3000:], done.stderr[-3000:])
    assert list(figures) == list(FIGURES)
    for name, figure in figures.items():  # skipped only where SMOKE says why, and the output says it too
        assert ("skipped" in figure) == isinstance(SMOKE.get(name), str), name
        if "skipped" in figure:
            assert figure["skipped"] == SMOKE[name] and f'{name} {{"skipped": ' in done.stdout
    assert "0 failed" in done.stdout.splitlines()[-1]


def test_a_failing_entry_makes_the_smoke_run_fail(monkeypatch, capsys):
    from bench import __main__ as bench

    monkeypatch.setitem(bench.FIGURES, "broken", ("bench.no_such_module", "measure"))
    monkeypatch.setattr(sys, "argv", ["bench", "--smoke", "--only", "broken"])
    try:
        bench.main()
    except SystemExit as stop:
        assert stop.code == 1
    else:
        raise AssertionError("a failing entry must end --smoke with a non-zero status")
    assert '"error": "ModuleNotFoundError' in capsys.readouterr().out


def test_every_smoke_size_names_an_entry_and_its_parameters():
    """A SMOKE key or keyword misspelt would run that entry at a larger size, or fail only minutes into the run."""
    import importlib
    import inspect

    for name, how in SMOKE.items():
        assert name in FIGURES, name
        if isinstance(how, str):
            continue
        module, fn = FIGURES[name]
        accepted = inspect.signature(getattr(importlib.import_module(module), fn)).parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
            continue  # handed on (overview_512(quick, **smaller)): the entry it calls checks them at smoke size
        assert set(how) <= set(accepted), (name, set(how) - set(accepted))
