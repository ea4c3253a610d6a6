"""N app replicas behind nginx on this machine, as docs/DEPLOY.md describes, for tests and the load test.

Starts N `streamlit run app.py` processes on free local ports (hosted mode unless told otherwise) and one
nginx whose configuration is deploy/nginx.conf with only the ports and file paths changed, so what is tested
is what is shipped. Installs nginx from the distribution's packages when it is missing (as `make nginx` does).
Everything started here is stopped on leaving the context.

    with cluster(replicas=3) as c:
        c.url        # http://127.0.0.1:<port> (nginx)
        c.pids       # the replicas' process ids, for their memory
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench.browser import ALLOCATOR, ROOT, free_port

CONF = ROOT / "deploy" / "nginx.conf"


def replica_env(hosted: bool = True) -> dict[str, str]:
    """The environment a replica starts with: offline, hosted (unless told otherwise), glibc's arenas bounded."""
    return dict(os.environ, HF_HUB_OFFLINE="1", **ALLOCATOR, **({"ATTENTION_EXPLORER_HOSTED": "1"} if hosted else {}))


@dataclass
class Cluster:
    url: str
    pids: list[int]
    ports: list[int]


def nginx_binary() -> str:
    """The nginx executable, installed with apt-get when missing (root, or passwordless sudo)."""
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)
    if found:
        return found
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True)
    subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "nginx"], check=True,
                   env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    return shutil.which("nginx") or "/usr/sbin/nginx"


def nginx_config(app_ports: list[int], port: int) -> str:
    """deploy/nginx.conf with these upstream ports and this listening port; its files (pid, log, temp) are already
    under the prefix it runs with."""
    text = CONF.read_text()
    text = re.sub(r"(?m)^( *)server 127\.0\.0\.1:\d+;\n(?: *server 127\.0\.0\.1:\d+;\n)*",
                  lambda m: "".join(f"{m.group(1)}server 127.0.0.1:{p};\n" for p in app_ports), text)
    text = re.sub(r"listen 127\.0\.0\.1:\d+;", f"listen 127.0.0.1:{port};", text)
    return text.replace("worker_processes auto;", "worker_processes 1;")


def _healthy(url: str) -> bool:
    with contextlib.suppress(OSError):
        return urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok"
    return False


@contextlib.contextmanager
def cluster(replicas: int = 2, hosted: bool = True, timeout_s: float = 180.0):
    """Yield a Cluster of `replicas` app servers behind nginx; stop them all afterwards."""
    nginx = nginx_binary()
    env = replica_env(hosted)
    ports = [free_port() for _ in range(replicas)]
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="ae-nginx-") as tmp:
        prefix = Path(tmp)
        try:
            for p in ports:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
                     "--server.port", str(p), "--server.address", "127.0.0.1", "--browser.gatherUsageStats",
                     "false", "--server.fileWatcherType", "none"],
                    cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            port = free_port()
            (prefix / "nginx.conf").write_text(nginx_config(ports, port))
            subprocess.run([nginx, "-t", "-q", "-p", str(prefix), "-e", "stderr", "-c", str(prefix / "nginx.conf")],
                           check=True)
            procs.append(subprocess.Popen([nginx, "-p", str(prefix), "-e", "stderr", "-c", str(prefix / "nginx.conf"),
                                           "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            deadline = time.time() + timeout_s
            waiting = [f"http://127.0.0.1:{p}" for p in ports] + [f"http://127.0.0.1:{port}"]
            while waiting and time.time() < deadline:
                waiting = [u for u in waiting if not _healthy(u)]
                time.sleep(0.2)
            if waiting:
                raise RuntimeError(f"not serving after {timeout_s:.0f} s: {waiting}")
            yield Cluster(f"http://127.0.0.1:{port}", [p.pid for p in procs[:replicas]], ports)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
