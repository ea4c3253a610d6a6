"""A Ray cluster of two (or more) nodes on this machine, for the slow Ray test and the corpus_ray figure.

local_cluster(nodes) starts `ray start --head` and nodes - 1 `ray start --address` processes on 127.0.0.1,
each with one CPU, a small object store, no dashboard and its own temporary folder, and yields the head's
address. Each node runs with --block in a process group of its own; leaving the block ends exactly those
groups (and any process left that was started with this cluster's temporary folder), never `ray stop`,
which would end every Ray process of the machine. Not for real clusters: docs/SCALE.md says how to start those.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.browser import free_port

STORE_BYTES = 80_000_000   # per node: shards are a few hundred kB each


def _ray() -> str:
    return str(Path(sys.executable).with_name("ray"))


def _listening(port: int, proc: subprocess.Popen, timeout: float) -> None:
    """Wait until the head's port takes connections (its control store is up)."""
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s, contextlib.suppress(OSError):
            s.settimeout(1)
            s.connect(("127.0.0.1", port))
            return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the Ray head did not start on port {port} (exit status {proc.poll()})")
        time.sleep(0.3)


def _leftovers(marker: str) -> list[int]:
    """Processes whose command line names this cluster's temporary folder."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            with contextlib.suppress(OSError):
                if marker.encode() in (p / "cmdline").read_bytes():
                    pids.append(int(p.name))
    return pids


@contextlib.contextmanager
def local_cluster(nodes: int = 2, timeout: float = 120):
    """Yield the head's address "127.0.0.1:PORT" once the head listens (the others are joining); stop all after."""
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must stay under 108 bytes
    port = free_port()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_DISABLE_IMPORT_WARNING="1")
    common = ["--num-cpus=1", f"--object-store-memory={STORE_BYTES}", "--node-ip-address=127.0.0.1", "--block",
              "--disable-usage-stats"]
    procs = []
    try:
        procs.append(subprocess.Popen([_ray(), "start", "--head", f"--port={port}", f"--temp-dir={temp}",
                                       "--include-dashboard=false", *common], env=env, start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        address = f"127.0.0.1:{port}"
        _listening(port, procs[0], timeout)
        for _ in range(nodes - 1):
            procs.append(subprocess.Popen([_ray(), "start", f"--address={address}", *common], env=env,
                                          start_new_session=True, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        yield address  # the other nodes join while the caller starts: Ray waits for the resources it asks for
    finally:
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.5)
        for pid in _leftovers(temp):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)
