"""corpus_ray: python -m corpus_heads over 2,000 built-in sentences (MiniLM), on a two-worker Ray cluster on this
machine (a head and a worker node, one CPU each: bench.ray_cluster) and in one process (torch's default threads
on the same CPUs).

seconds and seconds_local are each run's own figure (meta.json "seconds": from the command's start of work to the
merged result, so the Ray run includes connecting and both workers loading the model, and neither includes
Python's imports); max_abs_diff is analysis.corpus_stats.max_abs_diff between the two results; by_array each
array's (analysis.corpus_stats.diffs: its largest difference and its largest value, the sums over every sentence
being large), max_rel_diff the largest of those differences over its array's largest value. quick: 200.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cli(args: list[str]) -> None:
    out = subprocess.run([sys.executable, "-m", "corpus_heads", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=3600, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if out.returncode:
        raise RuntimeError(out.stderr[-1500:])


def measure(quick: bool, sentences: int | None = None, model: str = "bert") -> dict:
    from analysis import corpus_stats
    from bench.ray_cluster import local_cluster
    from data import corpus
    from experiments import corpus_results

    n = sentences or (200 if quick else 2000)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "corpus.txt"
        data.write_text("\n".join(corpus.builtin(n).sentences) + "\n")
        args = ["--model", model, "--data", str(data)]
        with local_cluster(2) as address:
            _cli([*args, "--out", f"{tmp}/ray", "--ray", address, "--workers", "2"])
        _cli([*args, "--out", f"{tmp}/local"])
        ray, local = corpus_results.read(Path(tmp) / "ray"), corpus_results.read(Path(tmp) / "local")
    by_array = corpus_stats.diffs(ray.stats, local.stats)
    return {"sentences": len(local.sentences), "workers": ray.meta["workers"], "seconds": ray.meta["seconds"],
            "seconds_local": local.meta["seconds"], "max_abs_diff": corpus_stats.max_abs_diff(ray.stats, local.stats),
            "by_array": {k: {"max_abs_diff": d, "largest": big} for k, (d, big) in by_array.items()},
            "max_rel_diff": max((d / big for d, big in by_array.values() if big), default=0.0),
            "nodes": ray.meta["nodes"], "model": model}
