"""Warm each replica by its own port: one session opens every view in the navigation once, with its defaults.

    python -m bench.warm 8501 8502 8503          # the replicas' ports on this machine (not nginx's)
    python -m bench.warm --host 10.0.0.5 8501

Through nginx a browser reaches only the replica its cookie sticks to, so "open every view once" there warms one
replica of three. Here each replica is spoken to directly (bench/load.py's Student: the app's websocket, no
browser), so each imports every view's libraries, loads the built-in models and keeps the default results.
Kept results are dropped after 15 idle minutes (ui/runtime/cache.py): warm within that before a class. It waits for a
replica to answer its health check (a fresh one is still starting) and exits non-zero with the views that drew
an exception or did not finish. It does not press buttons (a long request stays the student's).
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
import urllib.request

from bench.student import Student, views


def _wait_healthy(url: str, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while True:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                return
        except OSError:
            if time.time() > deadline:
                raise
        time.sleep(0.5)


async def warm(url: str, timeout_s: float = 300.0) -> dict[str, float]:
    """Run every view once in one new session of the server at `url`; -> {view: seconds}. Raises RuntimeError
    naming the views that failed."""
    student, seconds, problems = Student(url), {}, []
    await student.open()
    try:
        for view in views():
            took, found, _ = await student.run(view, {}, timeout_s=timeout_s)
            seconds[view or "home"] = round(took, 2)
            problems += found
    finally:
        await student.close()
    if problems:
        raise RuntimeError("; ".join(problems))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ports", type=int, nargs="+", help="each replica's own port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--wait", type=float, default=180.0, help="seconds to wait for a replica to start")
    args = parser.parse_args()
    failed = False
    for port in args.ports:
        url = f"http://{args.host}:{port}"
        try:
            _wait_healthy(url, args.wait)
            took = asyncio.run(warm(url))
            print(f"{url}: {len(took)} views warm in {sum(took.values()):.1f} s", flush=True)
        except (OSError, RuntimeError) as err:
            failed = True
            print(f"{url}: not warm: {err}", file=sys.stderr, flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
