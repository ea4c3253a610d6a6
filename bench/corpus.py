"""corpus_heads: MiniLM over 1,000 built-in sentences (~22 tokens each), every head's statistics, cold cache.

Runs in a fresh Python process so peak_bytes is that process's own peak resident memory (VmHWM, see
limits/memory.py: interpreter, torch, the model and the run together). Not ru_maxrss: Linux carries the peak of
the process that started the child into it, so under a 2.5 GB bench run it read 2.5 GB before the child began.
seconds: experiments.corpus.run alone, the model already loaded, the cache folder empty; cache_bytes: the shards it
wrote. quick: 100 sentences.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the child: a fresh Python (-c in the project root) that runs child() and prints its JSON
CHILD = "import json, sys; from bench.corpus import child; print(json.dumps(child(int(sys.argv[1]), sys.argv[2])))"


def child(n: int, folder: str) -> dict:
    """The run itself: load MiniLM, analyse n built-in sentences into an empty folder -> the figure's keys."""
    import time

    import models
    from data import corpus
    from experiments import corpus as ec
    from limits import memory

    model = models.shared("bert")  # this process's own, unless the smoke holds one already
    sentences = corpus.builtin(n).sentences
    start = time.perf_counter()
    result = ec.run(model, sentences, folder=Path(folder))
    seconds = time.perf_counter() - start
    assert result.done == len(sentences) and result.computed > 0 and result.loaded == 0
    return {"sentences": len(sentences), "seconds": round(seconds, 2), "peak_bytes": memory.peak_bytes(),
            "cache_bytes": sum(p.stat().st_size for p in Path(folder).glob("*.npz"))}


def measure(quick: bool, sentences: int | None = None, fresh: bool = True) -> dict:
    """The figure: 1,000 sentences (quick: 100; or `sentences`), in a fresh child process. fresh=False: in this
    process, on its model if loaded already (the smoke's: the same run without a Python and torch started for it;
    peak_bytes is then this process's peak, not the figure)."""
    with tempfile.TemporaryDirectory() as folder:
        n = sentences or (100 if quick else 1000)
        if not fresh:
            return child(n, folder)
        out = subprocess.run([sys.executable, "-c", CHILD, str(n), folder], cwd=ROOT,
                             capture_output=True, text=True, timeout=1200, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if out.returncode:
        raise RuntimeError(out.stderr[-1500:])
    return json.loads(out.stdout.strip().splitlines()[-1])
