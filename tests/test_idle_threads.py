"""Hosted mode makes torch's idle OpenMP threads sleep (OMP_WAIT_POLICY=PASSIVE) before torch loads; a laptop, and
a server whose environment says otherwise, keep their setting. Each case is a fresh process, as a server starts."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = ("import os, sys, streamlit, limits; "
         "print(os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules)")


def _fresh(**env) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "ATTENTION_EXPLORER_HOSTED")}
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=base | env, capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


@pytest.mark.parametrize(("env", "seen"), [({"ATTENTION_EXPLORER_HOSTED": "1"}, "PASSIVE False"),
                                           ({}, "None False"),
                                           ({"ATTENTION_EXPLORER_HOSTED": "1", "OMP_WAIT_POLICY": "ACTIVE"},
                                            "ACTIVE False")])
def test_hosted_mode_sets_the_wait_policy_before_torch_loads(env, seen):
    assert _fresh(**env) == seen


def test_the_frame_imports_limits_before_anything_that_loads_torch():
    lines = [line for line in (ROOT / "app.py").read_text().splitlines() if line.startswith(("import ", "from "))]
    first_own = next(i for i, line in enumerate(lines) if not line.startswith(("from __future__", "import streamlit")))
    assert lines[first_own] == "import limits", lines[:first_own + 1]


@pytest.mark.parametrize(("env", "threads"), [({"ATTENTION_EXPLORER_HOSTED": "1"}, "1"),
                                              ({"ATTENTION_EXPLORER_HOSTED": "1", "OMP_NUM_THREADS": "2"}, "2")])
def test_hosted_mode_runs_a_requests_torch_work_on_its_own_thread(env, threads):
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "ATTENTION_EXPLORER_HOSTED")}
    probe = "import limits, torch; print(torch.get_num_threads())"
    seen = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=base | env, capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()
    assert seen == threads
