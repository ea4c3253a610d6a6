"""patching: seconds for patch_heads on the built-in `gpt` over a 16-token minimal pair, as the Patching view runs it.

The pair copies a function's argument: "def scale(name, factor):\\n    return name *" against the same with `path`
(16 tokens each, the model's own tokenizer), answer " name", wrong " path". One head at a time, every head
(layers × heads sequences in layers batched forwards, plus the clean and corrupted runs). seconds: median
wall-clock time of three calls after one warm-up in this process, one torch thread; cpu_seconds: the process CPU
time of the same calls, which a busy shared machine inflates less. quick: one call. Says which CPU it ran on.
"""
from __future__ import annotations

import statistics
import time

CLEAN = "def scale(name, factor):\n    return name *"
CORRUPT = "def scale(path, factor):\n    return path *"


def measure(quick: bool) -> dict:
    import torch

    import models
    from experiments.patching import patch_heads, token_ids

    m = models.load("gpt")
    n = len(token_ids(m, CLEAN))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batches of 4 × 16 tokens: a second thread only waits (and spins) on a busy machine
    try:
        p = patch_heads(m, CLEAN, CORRUPT, " name", " path")  # warm-up: installs the idle hooks once
        wall, cpu = [], []
        for _ in range(1 if quick else 3):
            start, start_cpu = time.perf_counter(), time.process_time()
            p = patch_heads(m, CLEAN, CORRUPT, " name", " path")
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    finally:
        torch.set_num_threads(threads)
    return {"model": "gpt", "layers": int(p.scores.shape[0]), "heads": int(p.scores.shape[1]),
            "seconds": round(statistics.median(wall), 3), "cpu_seconds": round(statistics.median(cpu), 3),
            "tokens": n, "clean_diff": round(p.clean_diff, 3), "corrupt_diff": round(p.corrupt_diff, 3),
            "cpu": torch.backends.cpu.get_cpu_capability(), "threads": 1}
