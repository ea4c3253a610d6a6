"""What every script that trains a built-in Hugging Face folder (train/gpt.py, train/vit.py,
train/seq2seq_transformer.py) does around its training: make room for the folder it writes, write its
figures to <folder>/training.json, and parse the common command line. Does not train or measure."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path


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
