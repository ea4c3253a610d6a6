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

import functools
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


@functools.cache
def _files(name: str) -> tuple[str, dict[Path, int]] | None:
    """(installed version, {file: bytes}) of a distribution as its RECORD lists it, or None when not installed;
    read once per run, as both locks pin most of the same distributions."""
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return None
    files = {}
    for file in dist.files or ():
        path = Path(dist.locate_file(file))
        if os.path.lexists(path) and not path.is_dir():
            files[path] = path.lstat().st_size
    return dist.version, files


def _size(names, mismatched: set) -> int:
    seen, total = set(), 0
    for venv_file in (Path(sys.prefix) / "bin").iterdir():
        seen.add(venv_file)
        total += venv_file.lstat().st_size
    total += (Path(sys.prefix) / "pyvenv.cfg").stat().st_size
    for name, version in names.items():
        found = _files(name)
        if found is None:
            mismatched.add(f"{name} (not installed)")
            continue
        installed, files = found
        if version is not None and installed != version:
            mismatched.add(f"{name} {installed} (locked {version})")
        for path, size in files.items():
            if path not in seen:
                seen.add(path)
                total += size
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
