"""A throwaway PostgreSQL server for the store's tests: Debian's package (make postgres installs it), a cluster in a
temporary folder, reached by its Unix socket only, stopped and removed after the module. As root (CI), the
server runs as the `postgres` user the package creates: PostgreSQL refuses to run as root."""
import glob
import os
import shutil
import subprocess
import tempfile

import pytest


def _bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        pytest.fail(f"PostgreSQL's {name} was not found: run `make postgres` (Debian's package postgresql).")
    return found


@pytest.fixture(scope="module")
def postgres_url():
    folder = tempfile.mkdtemp(prefix="pg-")
    as_user = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(folder, "data")
    run = lambda *cmd: subprocess.run([*as_user, *cmd], check=True, capture_output=True, text=True)  # noqa: E731
    run(_bin("initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync")
    run(_bin("pg_ctl"), "-D", data, "-w", "-l", os.path.join(folder, "log"),
        "-o", f"-k {folder} -c listen_addresses='' -p 5499 -c fsync=off", "start")
    try:
        yield f"postgresql+psycopg://postgres@/postgres?host={folder}&port=5499"
    finally:
        run(_bin("pg_ctl"), "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)
