"""corpus_heads: MiniLM over 1,000 built-in sentences (~22 tokens each), every head's statistics, cold cache.

Runs in a fresh Python process so peak_bytes is that process's honest peak resident memory (ru_maxrss:
interpreter, torch, the model and the run together). seconds: experiments.corpus.run alone, the model
already loaded, the cache folder empty; cache_bytes: the shards it wrote. quick: 100 sentences.
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
import json, resource, sys, time
from pathlib import Path
import models
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
                  "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "cache_bytes": sum(p.stat().st_size for p in folder.glob("*.npz"))}))
"""


def measure(quick: bool) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        out = subprocess.run([sys.executable, "-c", CHILD, "100" if quick else "1000", folder], cwd=ROOT,
                             capture_output=True, text=True, timeout=1200, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if out.returncode:
        raise RuntimeError(out.stderr[-1500:])
    return json.loads(out.stdout.strip().splitlines()[-1])
