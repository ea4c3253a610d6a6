"""cuda_paths: what the project computes on a CUDA GPU, each against the CPU path it must equal or beat.

    python -m bench.cuda_paths --json out.json        # on a machine with a CUDA GPU; refuses without one

- families: every model the sidebar lists and every tiny random family of bench.tiny_families, loaded on cpu
  and on cuda (float32): the largest |attention cuda − attention cpu| over every layer and head of one text.
- corpus: `python -m corpus_heads --model gpt` on 2,000 built-in sentences with --device cuda and in one CPU
  process: each run's seconds and analysis.corpus_stats.max_abs_diff between the two results.
- attention_cost: experiments.attention_cost.curves over every method torch offers on cuda (sdpa's flash and
  memory-efficient kernels among them) at n = 1,024 … 16,384: seconds and peak bytes from torch's allocator.
- precision: the built-in `gpt` loaded in float16 and bfloat16 on cuda against float32 on cuda: the largest attention
  difference and the speed-up of a 16 × 128-token forward pass (experiments.precision.timing_batch).
- cpu_dtypes: the same on this machine's CPU: which dtypes models.devices offers there (torch's report of the
  CPU's instructions) and what each costs; minilm_shape: both for a random BERT of MiniLM-L6's shape.
Each part records its error instead of stopping the others. Not part of `python -m bench` (CI has no GPU).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import fields
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GPU = "cuda"
RUNS = 20
PARTS = ["families", "attention_cost", "precision", "cpu_dtypes", "minilm_shape", "corpus"]
MODEL = "gpt"  # the corpus and precision parts: the built-in decoder (its weights ship in the repository)
TEXT = "The keys to the cabinet are on the table, and the cat sat on the mat because it was warm."
OWN_TEXT = {"tiny": "31415", "seq2seq-bahdanau": "march 3, 2021", "seq2seq-luong": "march 3, 2021",
            "induction": "ba ke mi ba ke mi"}  # the built-ins that read only their own kind of input


def _attention_diff(spec: str) -> dict:
    import models

    cpu, gpu = models.load(spec, device="cpu"), models.load(spec, device=GPU)
    text = OWN_TEXT.get(spec, TEXT)
    a, b = cpu.attend(text), gpu.attend(text)
    return {"max_abs_diff": float(abs(a.weights.astype("float64") - b.weights.astype("float64")).max()),
            "shape": list(a.weights.shape)}


def families(tmp: Path) -> dict:
    import models
    from bench import tiny_families

    out = {}
    specs = [k for k in models.available() if k not in ("vit",)]
    for name, fam in tiny_families.FAMILIES.items():
        if fam.kind != "vision":
            specs.append(f"hf:{tiny_families.write(name, tmp / name)}")
    for spec in specs:
        key = spec if not spec.startswith("hf:") else "tiny-" + Path(spec[3:]).name
        try:
            out[key] = _attention_diff(spec)
        except Exception as err:  # noqa: BLE001 - recorded, the other families go on
            out[key] = {"error": f"{type(err).__name__}: {err}"[:300]}
    return out


def _cli(args: list[str]) -> dict:
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "corpus_heads", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=1200, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if run.returncode:
        raise RuntimeError(run.stderr[-1500:])
    return {"wall_s": round(time.perf_counter() - start, 2)}


def corpus(tmp: Path, n: int = 2000) -> dict:
    from analysis import corpus_stats
    from data import corpus as dc
    from experiments import corpus_results

    data = tmp / "corpus.txt"
    data.write_text("\n".join(dc.builtin(n).sentences) + "\n")
    _cli(["--model", MODEL, "--data", str(data), "--out", str(tmp / "gpu"), "--device", GPU])
    _cli(["--model", MODEL, "--data", str(data), "--out", str(tmp / "cpu")])
    gpu, cpu = corpus_results.read(tmp / "gpu"), corpus_results.read(tmp / "cpu")
    worst = {}  # per array of the result: the largest |gpu - cpu| and the largest |cpu| it is measured against
    for f in fields(gpu.stats):
        x, y = getattr(gpu.stats, f.name), getattr(cpu.stats, f.name)
        if isinstance(x, np.ndarray) and x.size:
            worst[f.name] = [float(np.nanmax(np.abs(x.astype(np.float64) - y))), float(np.nanmax(np.abs(y)))]
    return {"sentences": len(cpu.sentences), "seconds_cuda": gpu.meta["seconds"], "seconds_cpu": cpu.meta["seconds"],
            "max_abs_diff": corpus_stats.max_abs_diff(gpu.stats, cpu.stats), "per_array": worst,
            "cpu_threads": os.cpu_count()}


def attention_cost() -> dict:
    from experiments import attention_cost as ac

    sizes = [1024, 4096, 16384]
    curves = ac.curves(list(ac.methods(GPU)), sizes, device=GPU)
    return {m: {n: {"seconds": p.get("seconds"), "peak_bytes": p.get("peak_bytes"), "error": p.get("error")}
                for n, p in pts.items()} for m, pts in curves.items()}


def precision(device: str = GPU, spec: str = MODEL, text: str = TEXT) -> dict:
    import torch

    import models
    from experiments.precision import timing_batch
    from models.devices import synchronize

    ref = models.load(spec, device=device)
    ref_w = ref.attend(text).weights.astype("float64")
    out = {}
    for dtype in ("float32", "float16", "bfloat16"):
        m = models.load(spec, device=device, dtype=dtype)
        w = m.attend(text).weights.astype("float64")
        batch = timing_batch(m.tokenizer, device)
        net = m.model
        with torch.no_grad():
            for _ in range(3):
                net(**batch)
            synchronize(device)
            start = time.perf_counter()
            for _ in range(RUNS):
                net(**batch)
            synchronize(device)
        out[dtype] = {"dtype_used": str(m.dtype), "notices": list(m.notices)[-1:],
                      "max_attention_diff_vs_fp32": float(abs(w - ref_w).max()),
                      "forward_ms": round((time.perf_counter() - start) / RUNS * 1000, 3)}
    return out


def minilm_shape(tmp: Path) -> dict:
    """precision's dtypes on cpu and cuda for a BERT of MiniLM-L6's shape (6 layers, 12 heads, hidden 384, random
    weights: speed does not depend on their values) on a 2-sentence text of 64 tokens per item."""
    from bench import tiny_families

    spec = f"hf:{tiny_families.write('bert', tmp / 'minilm-shape', layers=6, heads=12, d=384, ffn=1536, positions=512)}"
    return {device: precision(device, spec) for device in (GPU, "cpu")}


def main() -> None:
    import torch

    if not torch.cuda.is_available():
        sys.exit("cuda_paths needs a CUDA GPU; this machine has none.")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write the figures to this file")
    p.add_argument("--only", nargs="*", default=PARTS)
    args = p.parse_args()
    import transformers

    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "transformers": transformers.__version__}
    with tempfile.TemporaryDirectory() as tmp:
        parts = {"families": lambda: families(Path(tmp)), "corpus": lambda: corpus(Path(tmp)),
                 "attention_cost": attention_cost, "precision": precision, "cpu_dtypes": lambda: precision("cpu"),
                 "minilm_shape": lambda: minilm_shape(Path(tmp))}
        for name in args.only:
            start = time.perf_counter()
            try:
                result[name] = parts[name]()
            except Exception:  # noqa: BLE001 - one part's failure is a finding, the others still run
                result[name] = {"error": traceback.format_exc()[-2000:]}
            result[f"{name}_s"] = round(time.perf_counter() - start, 1)
            print(name, json.dumps(result[name])[:3000], flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
