"""install: bytes on disk of the app's environment (requirements.lock, what `make run` installs) and of the
development one (requirements-dev.lock: the same pins plus the test tools, what `make test` installs).

Read from this environment's installed files, not by building two: each distribution's files as its RECORD lists
them, summed over the distributions a lock pins plus torch (installed first, outside the locks), pip and uv (in
every environment the Makefile makes) and the environment's own bin/ and pyvenv.cfg. An environment made from a lock
holds exactly those distributions, so this is its size as installed (uv writes no bytecode caches; Python adds them
as modules are first imported); `mismatched` lists pins this environment does not have at the locked version (their
sizes are the installed versions'). The optional extras' locks (cluster, notebook) come on top of the dev one.
"""
from __future__ import annotations

import os
import re
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALWAYS = ("torch", "pip", "uv")


def pins(lock: Path) -> dict[str, str]:
    """A lock's `name==version` lines -> {name: version}; extras dropped (psycopg[binary] -> psycopg)."""
    found = {}
    for line in lock.read_text().splitlines():
        m = re.match(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?==(\S+)", line)
        if m:
            found[m.group(1).lower().replace("_", "-")] = m.group(3)
    return found


def _size(names, mismatched: set) -> int:
    seen, total = set(), 0
    for venv_file in (Path(sys.prefix) / "bin").iterdir():
        seen.add(venv_file)
        total += venv_file.lstat().st_size
    total += (Path(sys.prefix) / "pyvenv.cfg").stat().st_size
    for name, version in names.items():
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            mismatched.add(f"{name} (not installed)")
            continue
        if version is not None and dist.version != version:
            mismatched.add(f"{name} {dist.version} (locked {version})")
        for file in dist.files or ():
            path = Path(dist.locate_file(file))
            if path not in seen and os.path.lexists(path) and not path.is_dir():
                seen.add(path)
                total += path.lstat().st_size
    return total


def measure(quick: bool) -> dict:
    mismatched: set = set()
    always = dict.fromkeys(ALWAYS)
    runtime = _size(always | pins(ROOT / "requirements.lock"), mismatched)
    dev = _size(always | pins(ROOT / "requirements-dev.lock"), mismatched)
    return {"runtime_bytes": runtime, "dev_bytes": dev, "runtime_packages": len(pins(ROOT / "requirements.lock")),
            "dev_packages": len(pins(ROOT / "requirements-dev.lock")), "mismatched": sorted(mismatched)}


if __name__ == "__main__":
    print(measure(False))
