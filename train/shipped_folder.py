"""What every script that trains a built-in Hugging Face folder (train/gpt.py, train/vit.py,
train/seq2seq_transformer.py) does around its training: make room for the folder it writes, write its
figures to <folder>/training.json, parse the common command line (`main`), and the one AdamW loop with a
warm-up then linear learning rate that train/vit.py and train/seq2seq_transformer.py share (`steps_of_adamw`).
It builds no model and measures nothing."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch


def parser(doc: str, steps: int, default_out: str) -> argparse.ArgumentParser:
    """--steps, --out and --overwrite; a script adds its own options."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--out", type=Path, help=f"folder to write (default {default_out})")
    p.add_argument("--overwrite", action="store_true", help="replace the folder if it exists")
    return p


def make_room(out: Path, overwrite: bool) -> None:
    """Remove `out` when overwriting; exit with one sentence when it exists and overwrite was not asked."""
    if out.exists():
        if not overwrite:
            sys.exit(f"{out} exists: pass --overwrite to replace it, or --out to write elsewhere.")
        shutil.rmtree(out)


def write_figures(out: Path, figures: dict, start: float | None = None) -> dict:
    """figures (with "seconds" since `start` when given) as <out>/training.json; returns them."""
    if start is not None:
        figures["seconds"] = round(time.time() - start)
    (out / "training.json").write_text(json.dumps(figures, indent=1) + "\n")
    return figures


def steps_of_adamw(params: list, steps: int, loss_of: Callable[[int], torch.Tensor], *, lr: float,
                   weight_decay: float, warmup: int, start: float, clip: float | None = None) -> None:
    """`steps` AdamW steps on `params`: the learning rate warms up over `warmup` steps, then falls linearly to 0;
    loss_of(step) draws its batch and returns the loss; gradients clipped to norm `clip` when given. Prints the loss
    every 500 steps. Draws no random numbers of its own, so a script's seeds decide every batch as before."""
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: min(1.0, (i + 1) / warmup) * max(0.0, 1 - i / steps))  # warm-up, then linear to 0
    for step in range(steps):
        loss = loss_of(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        schedule.step()
        if (step + 1) % 500 == 0:
            print(f"step {step + 1} loss {loss.item():.4f} {time.time() - start:.0f}s", flush=True)


def main(doc: str, name: str, steps: int, train: Callable[[int, Path], dict], argv: list[str],
         weights: Path) -> None:
    """The command line of a script that writes weights/<name>: --steps, --out, --overwrite; one torch thread."""
    args = parser(doc, steps, f"models/weights/{name}").parse_args(argv)
    out = args.out or weights / name
    make_room(out, args.overwrite)
    torch.set_num_threads(1)
    figures = train(args.steps, out)
    print(json.dumps(figures, indent=1))
    print(f"{name}: wrote {out} in {figures['seconds']} s")
