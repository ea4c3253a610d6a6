"""Time and peak memory of attention against sequence length n, each point measured in a fresh process.

    with Runner() as runner: runner.measure("tiled", 4096)  -> {"method": "tiled", "n": 4096, "seconds": 0.05, ...}
    curves(["dense", "tiled"], [256, 1024, 4096], progress=print)  -> {method: {n: point}}
    slope([256, 1024, 4096], [1e-4, 1.6e-3, 2.6e-2])  -> 2.0

Methods: "dense" (eager softmax(QK^T)V, the n x n matrix held whole), "sliding_window" (w = 128 each
side) and "block_sparse" (64-token blocks, a band of one block each side) through
analysis.efficient.sparse_attention, "tiled" (analysis.efficient.tiled_attention, 64-token key blocks),
and torch's own scaled_dot_product_attention ("sdpa": its fused kernel where one applies; on a GPU
also "sdpa_flash" and "sdpa_efficient", each forced with torch.nn.attention.sdpa_kernel).
Shape: batch 1, 1 head, head_dim 64, float32 on CPU and float16 on CUDA (flash needs half precision).

Peak memory is measured, not computed. On CPU every point runs in fresh child processes forked from
small fork servers (Runner) that imported torch once, so a point starts in milliseconds. The memory child
makes q, k, v (and a sparse method's mask and block layout), runs the method once at 128 tokens so lazy
set-up is out of the way, resets the kernel's high-water mark of its resident memory (writing 5 to
/proc/self/clear_refs), runs the attention once and reports VmHWM minus the resident size just before.
Why resident memory rather than torch.profiler's allocation records: it counts every page the attention
really touched (scores, softmax, gathered blocks, index tensors, output) with nothing to add up or miss.
Why a fresh process: an allocator that has grown keeps the pages it freed, so in a long-lived process a
second measurement would reuse them and read as nearly free. The memory server also fixes glibc's mmap
threshold at 64 KiB, so each larger tensor is mapped when allocated and returned when freed: with glibc's
moving threshold, how much freed memory stayed on its heap changed from one process to the next, and the
same tiled call read 4.8 MB in one and 9 MB in another. The inputs q, k, v and the boolean mask are not
counted (the mask is n^2 bytes, reported apart as mask_bytes: a production kernel takes only the block
layout). On CUDA the child reads torch.cuda.max_memory_allocated after reset_peak_memory_stats: the
caching allocator's own count, beyond what was allocated before the call.
Time: a second fresh child, with glibc's defaults as an application has them: one warm-up call, then the
best of 2 to 5 calls (more while they take under two seconds in all), on one CPU thread (so two
measurements do not share cores) or with the GPU synchronised.
Linux only (/proc); does not measure backward passes or batch sizes above 1.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from limits import memory
from limits.errors import UserError

SIZES = (256, 512, 1024, 2048, 4096, 8192, 16384)
METHODS = ("dense", "sliding_window", "block_sparse", "tiled", "sdpa")
GPU_METHODS = ("sdpa_flash", "sdpa_efficient")
LABELS = {"dense": "dense (eager)", "sliding_window": "sliding window w=128", "block_sparse": "block-sparse 64, band 1",
          "tiled": "tiled (ours, online softmax)", "sdpa": "torch SDPA (fused)", "sdpa_flash": "torch SDPA flash",
          "sdpa_efficient": "torch SDPA memory-efficient"}
WINDOW, BLOCK, BAND, HEAD_DIM = 128, 64, 1, 64
SLOPE_FROM = 1024  # fit slopes from here up: below it fixed per-call costs hide the growth
REPEATS = 5  # most timed calls of one point (limits.current().attention_cost_repeats may ask for fewer)
WARM_N = 128  # each child's first call, at this size, puts lazy set-up out of the way


def methods(device: str) -> tuple[str, ...]:
    """The methods measured on `device`: torch's separate fused GPU kernels only where there is a GPU."""
    return METHODS + (GPU_METHODS if device.startswith("cuda") else ())


def _inputs(method: str, n: int, device: str):
    """q, k, v (1, 1, n, 64) from seed 0, and the mask a sparse method needs (None for the others)."""
    import torch

    from analysis import sparsity
    from analysis.efficient import block_layout

    dtype = torch.float16 if device.startswith("cuda") else torch.float32
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, HEAD_DIM, generator=gen).to(device=device, dtype=dtype) for _ in range(3))
    mask = layout = None
    if method == "sliding_window":
        mask = sparsity.sliding_window(n, min(WINDOW, n - 1)).to(device)
    elif method == "block_sparse":
        mask = sparsity.block_sparse(n, min(BLOCK, n), min(BAND, -(-n // BLOCK) - 1)).to(device)
    if mask is not None:  # once per pattern, as a model would: every layer and head reuses it
        layout = block_layout(mask, BLOCK)
    return q, k, v, (mask, layout)


def _call(method: str, q, k, v, sparse):
    import torch.nn.functional as F

    from analysis.efficient import eager_attention, sparse_attention, tiled_attention

    if method == "dense":
        return eager_attention(q, k, v)
    if method in ("sliding_window", "block_sparse"):
        return sparse_attention(q, k, v, sparse[0], block=BLOCK, layout=sparse[1])
    if method == "tiled":
        return tiled_attention(q, k, v, block=BLOCK)
    if method == "sdpa":
        return F.scaled_dot_product_attention(q, k, v)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION}[method]
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v)


def _child(method: str, n: int, device: str, part: str, repeats: int = REPEATS) -> dict:
    """Runs in a fresh process. part "memory": the peak of one call beyond its inputs; part "time": one warm-up
    call, then the best of 2 to `repeats` timed calls (more while they take under two seconds in all)."""
    import torch

    cuda = device.startswith("cuda")
    if not cuda:
        torch.set_num_threads(1)  # own process: a fresh child per measurement
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    with torch.no_grad():
        _call(method, *_inputs(method, min(n, WARM_N), device))  # lazy set-up (threads, kernels) before measuring
        q, k, v, sparse = _inputs(method, n, device)
        sync()
        if part == "memory":
            if cuda:
                torch.cuda.reset_peak_memory_stats(device)
                before = torch.cuda.memory_allocated(device)
            else:
                before = memory.resident_bytes()
                memory.reset_peak()
            _call(method, q, k, v, sparse)
            sync()
            peak = (torch.cuda.max_memory_allocated(device) if cuda else memory.peak_bytes()) - before
            return {"peak_bytes": int(max(peak, 0)), "mask_bytes": 0 if sparse[0] is None else sparse[0].numel()}
        _call(method, q, k, v, sparse)
        sync()
        times: list[float] = []
        while len(times) < min(2, repeats) or (len(times) < repeats and sum(times) < 2.0):
            t0 = time.perf_counter()
            _call(method, q, k, v, sparse)
            sync()
            times.append(time.perf_counter() - t0)
    return {"seconds": min(times)}


def keys_per_query(method: str, n: int) -> int:
    """Keys each query is scored against: n for the dense methods; for a sparse one the K key blocks its query
    block gathers (analysis.efficient.sparse_attention pads every query block to the most any keeps).

        keys_per_query("dense", 4096) -> 4096;  keys_per_query("sliding_window", 4096) -> 320 (5 blocks of 64)
    """
    blocks = -(-n // BLOCK)
    if method == "sliding_window":
        return min(blocks, 2 * -(-min(WINDOW, n - 1) // BLOCK) + 1) * BLOCK
    if method == "block_sparse":
        return min(blocks, 2 * min(BAND, blocks - 1) + 1) * BLOCK
    return n


def call_flops(method: str, n: int) -> float:
    """FLOPs of one attention call on (1, 1, n, 64): QK^T and PV (2 multiply-adds per pair and dimension each)
    and ~5 per score for scaling, max, exp, sum and divide."""
    pairs = n * keys_per_query(method, n)
    return pairs * (4 * HEAD_DIM + 5)


def sweep_gflop(which: Sequence[str], sizes: Sequence[int], repeats: int = REPEATS) -> float:
    """The GFLOP of curves(which, sizes), every call's, counted before it starts from the sizes alone (never a
    clock). Each point runs a memory child (a warm-up at WARM_N, one call at n) and a time child (a warm-up at WARM_N,
    one at n, then at most `repeats` timed calls): 2 + repeats calls at n, 2 at WARM_N.
    """
    at_n = 2 + repeats
    return sum(at_n * call_flops(m, n) + 2 * call_flops(m, min(n, WARM_N)) for m in which for n in sizes) / 1e9


def _alloc_child(n_bytes: int) -> dict:
    """Calibration: the peak the same method reads for one tensor of n_bytes filled with ones."""
    import torch

    torch.ones(1024).sum()  # lazy set-up before measuring, as _child does
    before = memory.resident_bytes()
    memory.reset_peak()
    x = torch.ones(n_bytes // 4, dtype=torch.float32)
    peak = memory.peak_bytes() - before
    del x
    return {"peak_bytes": peak}


ROOT = Path(__file__).resolve().parent.parent
# glibc, for the measuring processes: every allocation over 64 KiB is a mapping of its own, unmapped when freed
# (a fixed threshold also stops glibc raising it as it goes), so resident memory follows the live tensors
MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(64 * 1024), "MALLOC_TRIM_THRESHOLD_": str(128 * 1024)}


SERVERS = 2  # helper processes a Runner starts (each forks one short-lived child per measurement)


class Runner:
    """Two small fork servers, each importing torch once, then forking a fresh child for every measurement: one
    for memory (glibc's mmap threshold fixed, MALLOC) and one for time (glibc's defaults, as an application
    runs: a fixed threshold makes every large tensor a fresh mapping and would slow tiled attention 3-6x).

    Used as a context manager (each server starts on first use); leaving it, also by an exception such as a
    Streamlit rerun, ends the servers and any child still measuring (each server and its children share a
    process group this runner created).
    """

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen] = {}

    def __enter__(self) -> Runner:
        return self

    def _server(self, part: str) -> subprocess.Popen:
        """The memory or time server, started on first use."""
        if part not in self.procs:
            env = dict(os.environ, **(MALLOC if part == "memory" else {}))
            self.procs[part] = subprocess.Popen(
                [sys.executable, "-m", "experiments.attention_cost", "--serve"], cwd=ROOT, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True, start_new_session=True, env=env)
        return self.procs[part]

    def __exit__(self, *exc) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stdin.close()
            proc.stdout.close()
        self.procs = {}

    def ask(self, part: str, **request) -> dict:
        """Send one request to the memory or time server and return its answer (RuntimeError for its error)."""
        proc = self._server(part)
        proc.stdin.write(json.dumps(dict(request, part=part)) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("The measuring process ended without an answer.")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def measure(self, method: str, n: int, device: str = "cpu", repeats: int = REPEATS) -> dict:
        """One point: seconds and peak bytes of `method` at n tokens on `device`, each in a fresh child; its time
        is the best of at most `repeats` calls."""
        if method not in methods(device):
            raise UserError(f"Unknown method {method!r}: choose one of {', '.join(methods(device))}.")
        if not isinstance(n, int) or n < 2:
            raise UserError(f"The sequence needs at least 2 tokens, not {n!r}.")
        point = {"method": method, "n": n, "device": device, "memory": (
            "torch.cuda.max_memory_allocated" if device.startswith("cuda") else "peak resident memory, fresh process")}
        for part in ("memory", "time"):
            point.update(self.ask(part, what="point", method=method, n=n, device=device, repeats=repeats))
        return point


def _serve() -> None:
    """The fork server's loop: a JSON request per line in, a JSON answer per line out."""
    import torch  # noqa: F401  (imported once here, so children start with it)

    import analysis.efficient  # noqa: F401
    import analysis.sparsity  # noqa: F401

    for line in sys.stdin:
        req = json.loads(line)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the fresh child: measure, answer through the pipe, leave without cleanup
            os.close(r)
            try:
                out = _alloc_child(req["n_bytes"]) if req["what"] == "alloc" else \
                    _child(req["method"], req["n"], req["device"], req["part"], req.get("repeats", REPEATS))
            except BaseException as err:  # noqa: BLE001  (reported to the parent, which raises it)
                out = {"error": f"{type(err).__name__}: {err}"}
            with os.fdopen(w, "w") as f:
                f.write(json.dumps(out))
            os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            answer = f.read()
        _, status = os.waitpid(pid, 0)
        if not answer:
            answer = json.dumps({"error": f"the measuring process died (status {status}), perhaps out of memory"})
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


def curves(which: Sequence[str], sizes: Sequence[int], device: str = "cpu",
           progress: Callable[[float, str], None] | None = None, repeats: int = REPEATS,
           runner: Runner | None = None) -> dict[str, dict[int, dict]]:
    """Every method at every size, smallest first: {method: {n: point}}; progress(fraction, what) after each;
    each point's time the best of at most `repeats` calls (sweep_gflop counts what this asks for). runner: an open
    Runner to measure on, left open (else one is started and ended here)."""
    out: dict[str, dict[int, dict]] = {m: {} for m in which}
    todo = [(m, n) for n in sorted(sizes) for m in which]
    with contextlib.nullcontext(runner) if runner is not None else Runner() as runner:
        for i, (m, n) in enumerate(todo):
            out[m][n] = runner.measure(m, n, device, repeats)
            if progress:
                progress((i + 1) / len(todo), f"{LABELS.get(m, m)} at n = {n:,}")
    return out


def slope(ns: Sequence[int], values: Sequence[float], from_n: int = SLOPE_FROM) -> float:
    """Least-squares slope of log(value) against log(n) over n >= from_n (all points if fewer than 2 there)."""
    pts = [(n, v) for n, v in zip(ns, values) if n >= from_n and v > 0]
    if len(pts) < 2:
        pts = [(n, v) for n, v in zip(ns, values) if v > 0]
    if len(pts) < 2:
        return math.nan
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


if __name__ == "__main__":
    if sys.argv[1:] != ["--serve"]:
        sys.exit("usage: python -m experiments.attention_cost --serve  (a fork server for Runner; not for people)")
    _serve()
