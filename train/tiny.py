"""Train the tiny sorting decoder (models/tiny.py); the defaults reproduce models/weights/tiny.safetensors.

Deterministic: fixed torch seed, fixed data-generator seeds, one CPU thread. Run from the repo root:

    python -m train.tiny                 # 8,000 steps, about 12.5 minutes on one busy CPU core;
                                                # writes models/weights/tiny.retrained.safetensors
    python -m train.tiny --overwrite     # the same, written over the shipped tiny.safetensors
    python -m train.tiny --steps 200 --out /tmp/t.safetensors   # a quick smoke run

Training strings mix uniform random digits with the cases people try (few distinct digits,
constant, already sorted, reverse sorted). The 2,000 held-out strings come from their own seed
and are excluded from training whenever they have 5 or more digits (shorter ones cannot be
held out: there are only 11,110 strings of 1-4 digits, and training sees nearly all of them).
The file's metadata records the config, the seeds, the step count and the measured held-out
accuracy (nothing time-dependent, so a rerun writes the same tensors and metadata).
This script does not tune anything: change the constants below and rerun.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from data.sorting import HELDOUT_SEED, batch, training_strings, uniform_strings
from models.tiny import WEIGHTS, TinyConfig, TinyDecoder

SEED, DATA_SEED = 1337, 7
BATCH, LR, MIN_LR, WARMUP, WEIGHT_DECAY = 256, 3e-3, 1e-5, 200, 0.01
HELDOUT_N, HELD_MIN_LEN = 2000, 5
CHECKS = ["3333333333", "0000000000", "9999999999", "0123456789", "9876543210", "1122334455",
          "5544332211", "9090909090", "1111111112", "2111111111", "31415", "7", "00", "98"]


@torch.no_grad()
def exact_match(model: TinyDecoder, strings: list[str]) -> float:
    """Fraction answered exactly: every answer token and the '.' right under teacher forcing,
    which is the same as greedy generation being right (the first error would be fed back)."""
    model.eval()
    x, y = batch(strings)
    logits, _ = model(x)
    ok = ((logits.argmax(-1) == y) | (y == -1)).all(dim=1)
    model.train()
    return ok.float().mean().item()


def lr_at(step: int, steps: int) -> float:
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    t = (step - WARMUP) / max(1, steps - WARMUP)
    return MIN_LR + 0.5 * (LR - MIN_LR) * (1 + math.cos(math.pi * t))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--out", default=str(WEIGHTS.with_suffix(".retrained.safetensors")),
                    help="where to write (default: beside the shipped weights, under a new name)")
    ap.add_argument("--overwrite", action="store_true", help="write over the shipped weights")
    args = ap.parse_args()
    out = str(WEIGHTS) if args.overwrite else args.out

    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    data_gen = torch.Generator().manual_seed(DATA_SEED)
    heldout = uniform_strings(torch.Generator().manual_seed(HELDOUT_SEED), HELDOUT_N)
    excluded = {s for s in heldout if len(s) >= HELD_MIN_LEN}

    cfg = TinyConfig()
    model = TinyDecoder(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.98), weight_decay=WEIGHT_DECAY)
    t0 = time.time()
    for step in range(args.steps):
        strings = [s for s in training_strings(data_gen, BATCH) if s not in excluded]
        x, y = batch(strings)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args.steps)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 250 == 0 or step == args.steps - 1:
            acc = exact_match(model, heldout)
            print(f"step {step:5d} loss {loss.item():.4f} lr {lr_at(step, args.steps):.2e} "
                  f"heldout {100 * acc:.2f}% {time.time() - t0:.0f}s", flush=True)

    acc = exact_match(model, heldout)
    wrong = [s for s in CHECKS if exact_match(model, [s]) < 1]
    print(f"final heldout exact {100 * acc:.2f}% on {HELDOUT_N}; hand-picked wrong: {wrong}", flush=True)
    record = {"heldout_exact": acc, "heldout_n": HELDOUT_N, "heldout_seed": HELDOUT_SEED,
              "steps": args.steps, "batch": BATCH, "seed": SEED, "data_seed": DATA_SEED}
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, out, metadata={"config": json.dumps(asdict(cfg)), "record": json.dumps(record)})
    print(f"wrote {out} after {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
