"""python -m bench [--quick] [--json FILE]: measure the figures the README quotes, write one JSON object.

Each figure comes from a module of this package with measure(quick) or named functions; a figure
whose module is missing or fails is reported as {"error": "..."} so the others still count.
"""
from __future__ import annotations

import argparse
import importlib
import json
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
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--only", nargs="*", help="figure names to measure")
    args = parser.parse_args()
    results = {}
    for name, (module, fn) in FIGURES.items():
        if args.only and name not in args.only:
            continue
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        try:
            results[name] = getattr(mod, fn)(args.quick)
        except Exception as err:  # one broken figure must not hide the others
            traceback.print_exc()
            results[name] = {"error": f"{type(err).__name__}: {err}"}
        print(name, json.dumps(results[name]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
