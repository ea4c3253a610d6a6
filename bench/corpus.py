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
CHILD = """
import json, sys, time
from pathlib import Path
import models
from limits import memory
from data import corpus
from experiments import corpus as ec
model = models.load("bert")
sentences = corpus.builtin(int(sys.argv[1])).sentences
folder = Path(sys.argv[2])
start = time.perf_counter()
result = ec.run(model, sentences, folder=folder)
seconds = time.perf_counter() - start
assert result.done == len(sentences) and result.computed > 0 and result.loaded == 0
print(json.dumps({"sentences": len(sentences), "seconds": round(seconds, 2),
                  "peak_bytes": memory.peak_bytes(),
                  "cache_bytes": sum(p.stat().st_size for p in folder.glob("*.npz"))}))
"""


def measure(quick: bool, sentences: int | None = None) -> dict:
    """The figure: 1,000 sentences (quick: 100; or `sentences`), in a fresh child process."""
    with tempfile.TemporaryDirectory() as folder:
        n = sentences or (100 if quick else 1000)
        out = subprocess.run([sys.executable, "-c", CHILD, str(n), folder], cwd=ROOT,
                             capture_output=True, text=True, timeout=1200, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if out.returncode:
        raise RuntimeError(out.stderr[-1500:])
    return json.loads(out.stdout.strip().splitlines()[-1])
