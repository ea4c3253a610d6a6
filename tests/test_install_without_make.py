"""README's path without make, run as written: `python -m venv .venv`, torch, `pip install -r requirements.lock`,
`streamlit run app.py`, in a fresh environment of a checkout of its own. The app answers and the test tools are
not there (requirements.lock is the app alone). Minutes and about 2 GB of disk: the slow group."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_lines() -> list[str]:
    """The commands of README's block after 'Without `make`', comments dropped."""
    block = (ROOT / "README.md").read_text().split("Without `make`", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [code for line in block.splitlines() if (code := line.split("#", 1)[0].strip())]


def test_the_readme_gives_the_lines():
    lines = readme_lines()
    assert lines[0] == "python -m venv .venv" and lines[-1] == ".venv/bin/streamlit run app.py"
    assert ".venv/bin/pip install -r requirements.lock" in lines


@pytest.mark.slow
@pytest.mark.timeout(3600)  # each README line may take up to 30 minutes on a slow machine (its own limit below)
def test_the_lines_without_make_install_the_app_alone_and_start_it(tmp_path):
    checkout = tmp_path / "checkout"  # the repository's files, not its .venv
    checkout.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {".venv", ".git"}:
            (checkout / entry.name).symlink_to(entry)
    bin_dir = tmp_path / "bin"  # `python` is this Python 3.11, outside any environment
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(getattr(sys, "_base_executable", sys.executable))
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", HF_HUB_OFFLINE="1")
    *setup, start = readme_lines()
    for line in setup:
        subprocess.run(line, shell=True, cwd=checkout, env=env, check=True, timeout=1800)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = subprocess.Popen(f"{start} --server.headless true --server.port {port} --server.address 127.0.0.1",
                           shell=True, cwd=checkout, env=env, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, healthy = time.time() + 180, False
        while time.time() < deadline and not healthy:
            try:
                healthy = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok"
            except OSError:
                time.sleep(0.5)
        assert healthy, "the app did not start"
    finally:
        os.killpg(app.pid, signal.SIGTERM)
        app.wait(timeout=30)
    venv_python = checkout / ".venv" / "bin" / "python"
    for tool in ("pytest", "playwright", "ruff", "importlinter", "axe_playwright_python"):
        assert subprocess.run([venv_python, "-c", f"import {tool}"], capture_output=True).returncode != 0, tool
