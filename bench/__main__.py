"""python -m bench [--quick | --smoke] [--json FILE]: measure the figures the README quotes, write one JSON object.

Each figure comes from a module of this package with measure(quick) or named functions; a figure
whose module is missing or fails is reported as {"error": "..."} so the others still count.
--smoke runs every entry at its smallest size (SMOKE: the smallest size that still runs the entry's code, or the
reason an entry is skipped, printed with it; the browser entries last, on one app server started first) and exits
non-zero when any entry errors: `make test` runs it, so an entry that stops working is noticed the day it breaks.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path

# figure name -> (module, function)
FIGURES = {
    "heads_overview_128": ("bench.heads", "overview"),
    "browser_heads_128": ("bench.heads", "browser_paint"),
    "heads_overview_512": ("bench.heads", "overview_512"),
    "browser_heads_512": ("bench.heads", "browser_paint_512"),
    "flow_32": ("bench.flow", "measure"),
    "flow_64": ("bench.flow", "measure_64"),
    "flow_128": ("bench.flow", "measure_128"),
    "kv_512": ("bench.kv", "measure"),
    "pruning_bert": ("bench.pruning", "measure"),
    "pruning_own": ("bench.pruning_own", "measure"),
    "attribution": ("bench.attribution", "measure"),
    "bertviz_128": ("bench.bertviz", "measure"),
    "cold_start": ("bench.cold_start", "measure"),
    "sparse_attention": ("bench.efficient", "sparse"),
    "tiled_attention": ("bench.efficient", "tiled"),
    "corpus_heads": ("bench.corpus", "measure"),
    "families": ("bench.families", "measure"),
    "quantization": ("bench.quantization", "measure"),
    "load_students": ("bench.load", "measure"),  # also `python -m bench.load` (1 and 3 replicas)
    "long_text_160": ("bench.long_text", "measure"),
    "streaming": ("bench.streaming", "measure"),
    "heads_overview_1024h": ("bench.heads_1024", "overview"),
    "finder_1024h": ("bench.heads_1024", "finder"),
    "browser_heads_1024h": ("bench.heads_1024", "browser_paint"),
    "next_token": ("bench.next_token", "measure"),
    "patching": ("bench.patching", "measure"),
    "induction": ("bench.induction", "measure"),
    "corpus_ray": ("bench.corpus_ray", "measure"),
    "install": ("bench.install", "measure"),
    "circuits": ("bench.circuits", "measure"),
}

# --smoke: keyword arguments for the smallest size that still runs the entry's code (fewer tokens, rows and runs, no
# warm-up, one view), or (a string) why the entry is skipped
SMOKE: dict[str, dict | str] = {
    "heads_overview_128": {"tokens": 8, "runs": 1},
    "browser_heads_128": {"tokens": 8, "warm": False, "reuse": True},
    "heads_overview_512": {"tokens": 8, "runs": 1},
    "browser_heads_512": {"tokens": 9, "warm": False, "reuse": True},
    "kv_512": {"tokens": 12, "warm": False},
    "pruning_bert": {"sizes": (4, 8, 1), "repeats": 1, "texts": 2},
    "pruning_own": {"steps": 10, "rows": 40},
    "attribution": {"pairs": 1, "steps": 4, "warm": False, "shortest": True},
    "bertviz_128": {"tokens": 8, "warm": False, "model_draw": True},
    "cold_start": {"only": ("home",), "reuse": True},
    "sparse_attention": {"sizes": (128, 256), "repeats": 1},
    "tiled_attention": {"n": 256, "lengths": (1, 63, 64, 65)},
    "corpus_heads": {"sentences": 2, "fresh": False},
    "quantization": {"items": 4, "only": ("tiny",)},
    "families": {"reload": False},
    "circuits": {"pairs": 2, "top": 10, "steps": 2},
    "long_text_160": {"only": ("inside_head",), "words": 12, "read_s": 0, "teacher": False, "hasty": False},
    "streaming": {"sizes": (48, 8, 2)},
    "heads_overview_1024h": {"tokens": 16},
    "finder_1024h": {"tokens": 16},
    "browser_heads_1024h": {"tokens": 16, "warm": False},
    "load_students": "needs nginx in front of a replica and simulated students through every view (minutes "
                     "even at 4 students); `make load` and tests/browser/test_load.py (slow group) run it",
    "corpus_ray": "starts a two-node Ray cluster (two `ray start` processes, tens of seconds); "
                  "tests/corpus_heads/test_ray.py (slow group) runs the same path",
}
# the entries that read the packaged MiniLM (models.shared("bert")): under --smoke they share one load, held for the run
READ_BERT = {"heads_overview_128", "heads_overview_512", "attribution", "bertviz_128", "corpus_heads"}
# the entries that drive a browser: under --smoke they share one app server and one Chromium (bench.browser.shared)
BROWSER = {"browser_heads_128", "browser_heads_512", "bertviz_128", "cold_start", "long_text_160",
           "browser_heads_1024h"}


def _cpu_s() -> float:
    """CPU seconds of this process, of its children that have ended (an entry's fresh Pythons), and of its
    descendants still running (the smoke's shared app server, Chromium and fork servers), read from /proc (Linux)."""
    own, ended = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime + _live_descendants_cpu_s()


def _live_descendants_cpu_s() -> float:
    """utime, stime and the times of their own ended children, summed over this process's running descendants."""
    parent, ticks = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the name, which may hold spaces
        except OSError:  # ended while read
            continue
        pid = int(stat.parent.name)
        parent[pid], ticks[pid] = int(fields[1]), sum(int(f) for f in fields[11:15])
    total, me = 0, os.getpid()
    for pid in ticks:
        up = parent.get(pid)
        while up is not None and up != me and up > 1:
            up = parent.get(up)
        total += ticks[pid] if up == me and pid != me else 0
    return total / os.sysconf("SC_CLK_TCK")


def run(name: str, quick: bool, smoke: bool) -> dict:
    """One figure, or {"error": ...} / {"skipped": reason}."""
    module, fn = FIGURES[name]
    how = SMOKE.get(name, {}) if smoke else {}
    if isinstance(how, str):
        return {"skipped": how}
    try:
        return getattr(importlib.import_module(module), fn)(quick or smoke, **how)
    except Exception as err:  # one broken figure must not hide the others
        traceback.print_exc()
        return {"error": f"{type(err).__name__}: {err}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument("--smoke", action="store_true", help="every entry at its smallest size; fails on an error")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--only", nargs="*", help="figure names to measure")
    args = parser.parse_args()
    unknown = set(args.only or ()) - set(FIGURES)
    if unknown:
        parser.error(f"no such figure: {', '.join(sorted(unknown))} (the names are bench/__main__.py's FIGURES)")
    names = [name for name in FIGURES if not args.only or name in args.only]
    if args.smoke:  # one torch thread, here and in the processes started: at these sizes a second thread only waits,
        # and on a shared machine its spinning counts as CPU seconds (attribution's doubled at load 13)
        os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    results, start = {}, time.perf_counter()
    held = []  # the model the smoke's entries share, alive until the run ends
    if args.smoke and READ_BERT & set(names):
        began, cpu = time.perf_counter(), _cpu_s()
        import models

        held.append(models.shared("bert"))
        print(f"(MiniLM loaded once for {', '.join(sorted(READ_BERT & set(names)))}) "
              f"[{time.perf_counter() - began:.1f} s, cpu {_cpu_s() - cpu:.1f} s]", flush=True)
    with contextlib.ExitStack() as stack:
        if args.smoke and BROWSER & set(names):
            from bench.browser import shared

            # one app server and Chromium for them all, started first: the server warms up while the other entries
            # run, which run first
            stack.enter_context(shared())
            names.sort(key=lambda name: name in BROWSER)
        if args.smoke and {"sparse_attention", "tiled_attention"} <= set(names):
            from bench.efficient import shared_runner

            stack.enter_context(shared_runner())  # one pair of fork servers for both
        for name in names:
            began, cpu = time.perf_counter(), _cpu_s()
            results[name] = run(name, args.quick, args.smoke)
            print(name, json.dumps(results[name]),  # CPU: a busy shared machine stretches the wall time, not this
                  f"[{time.perf_counter() - began:.1f} s, cpu {_cpu_s() - cpu:.1f} s]", flush=True)
        total_cpu = _cpu_s()  # before the shared server and Chromium end: Chromium's processes are not reaped here
    results = {name: results[name] for name in FIGURES if name in results}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    failed = [name for name, figure in results.items() if "error" in figure]
    skipped = [name for name, figure in results.items() if "skipped" in figure]
    print(f"{len(results) - len(failed) - len(skipped)} measured, {len(skipped)} skipped, {len(failed)} failed"
          f"{': ' + ', '.join(failed) if failed else ''} in {time.perf_counter() - start:.0f} s "
          f"(cpu {total_cpu:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)
    if args.smoke and failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
