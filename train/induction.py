"""Train the attention-only induction model (models/induction.py) and write its checkpoints and their scores.

Deterministic (own process): torch seed SEED, the task's training generator seeded TRAIN_SEED, one CPU thread, a
constant learning rate. Every EVERY steps the weights are rounded to fp16 (as shipped) and scored on fresh
sequences (experiments.induction.measure); the phase change is the first of those steps whose best layer-1 prefix
matching reaches JUMP_AT. Checkpoints are kept by KEEP (dense around the jump) and written as
models/weights/induction/step_XXXXX.safetensors with scores.json. Run from the repo root:

    nice python -m train.induction --overwrite        # 3,000 steps (19 min niced on a busy 2-core machine)
    nice python -m train.induction                    # the same into models/weights/induction.retrained/
    python -m train.induction --steps 300 --out /tmp/ind   # a quick smoke run elsewhere

With AdamW at 1e-3 the jump comes near step 1,150 on this task (a probe on a similar one saw it between 3,000 and
4,000; at 3e-3 that probe never left the unigram loss).
Nothing time-dependent is written, so a rerun writes the same files.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from data.induction import EVAL_SEED, TRAIN_SEED, repeated
from experiments.induction import N_EVAL, eval_batch, measure
from models.induction import FOLDER, InductionConfig, InductionNet, save

SEED, BATCH, LR, STEPS, EVERY = 1234, 64, 1e-3, 3000, 20
JUMP_AT = 0.3  # the phase change: the first measured step whose best layer-1 prefix matching reaches this
# kept: every 500 steps; every 100 within 500 steps of the jump; every 20 (all measured) within 160 of it
KEEP = ((500, float("inf")), (100, 500), (20, 160))


def rounded(net: InductionNet) -> InductionNet:
    """A copy of the net with its weights rounded to fp16 and back: what a checkpoint holds."""
    copy = InductionNet(net.cfg)
    copy.load_state_dict({k: v.detach().half().float() for k, v in net.state_dict().items()})
    return copy.eval()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--out", default=str(FOLDER.with_name("induction.retrained")),
                    help="a folder to write (default: beside the shipped one, under a new name)")
    ap.add_argument("--overwrite", action="store_true", help="replace the shipped checkpoints (or --out's)")
    args = ap.parse_args()
    out = FOLDER if args.overwrite and args.out == ap.get_default("out") else Path(args.out)
    if any(out.glob("step_*.safetensors")) and not args.overwrite:
        raise SystemExit(f"{out} already holds checkpoints: pass --overwrite to replace them.")

    torch.set_num_threads(1)  # own process: one thread makes the run reproducible
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(TRAIN_SEED)
    net = InductionNet(InductionConfig())
    opt = torch.optim.AdamW(net.parameters(), lr=LR)
    batch = eval_batch()
    snaps, measured, t0 = {}, {}, time.time()
    for step in range(args.steps + 1):
        if step % EVERY == 0:
            snap = rounded(net)
            snaps[step], measured[step] = snap, measure(snap, batch)
            s = measured[step]
            if step % 100 == 0:
                print(f"step {step:5d} first {s.loss_first:.3f} repeat {s.loss_repeat:.3f} "
                  f"prefix L1 {s.prefix[1].max():.3f} {time.time() - t0:.0f}s", flush=True)
        if step == args.steps:
            break
        ids, *_ = repeated(gen, BATCH)                                        # (B, T)
        logits, _ = net(ids)                                                  # (B, T, V)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    jump = next((s for s in sorted(measured) if measured[s].prefix[1].max() >= JUMP_AT), None)
    near = lambda s, within: within == float("inf") or (jump is not None and abs(s - jump) <= within)  # noqa: E731
    keep = sorted(s for s in measured if s == args.steps or any(s % k == 0 and near(s, w) for k, w in KEEP))
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("step_*.safetensors"):
        old.unlink()
    for s in keep:
        save(snaps[s], s, out)
    record = {"steps": keep, "jump_step": jump, "eval": {"seed": EVAL_SEED, "sequences": N_EVAL},
              "train": {"seed": SEED, "data_seed": TRAIN_SEED, "batch": BATCH, "lr": LR, "optimizer": "AdamW"},
              "scores": [measured[s].as_dict() for s in keep]}
    (out / "scores.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {len(keep)} checkpoints to {out} (jump at step {jump}) after {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
