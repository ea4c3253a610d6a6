"""Train the small BERT sentiment classifier of models/classifier.py and write models/weights/classifier/.

    python -m train.classifier --overwrite          # 2 layers x 4 heads, hidden 32, 300 steps, a few seconds

The tests load the shipped folder (tests/conftest.py: `classifier`), so no number they check depends on the
kernels of the CPU that runs them: a model trained inside a test session follows them (AVX-512 and AVX2 trained
models differ). Writes training.json with the held-out accuracy on rows the training never drew (seed 2).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

from data import reviews
from models import WEIGHTS
from models.classifier import make_classifier
from train import shipped_folder

NAME = "classifier"
STEPS = 300
HELDOUT = 400  # rows of reviews.rows(HELDOUT, seed=2); training draws seeds 1000 onwards


def accuracy(model, tok, rows: list[dict[str, str]]) -> float:
    """Fraction of rows whose arg-max class is their label."""
    enc = tok([r["text"] for r in rows], padding=True, return_tensors="pt")
    with torch.no_grad():
        predicted = model(**enc).logits.argmax(-1).tolist()  # (N,)
    return sum(reviews.LABELS[p] == r["label"] for p, r in zip(predicted, rows)) / len(rows)


def train(steps: int, out: Path) -> dict:
    start = time.time()
    model, tok = make_classifier(str(out), steps=steps)
    figures = {"model": NAME, "parameters": sum(p.numel() for p in model.parameters()),
               "data": "data/reviews.py: seeds 1000 + step for training, seed 2 held out",
               "steps": steps, "seed": 0, "threads": 1,
               "heldout": {"n": HELDOUT, "accuracy": round(accuracy(model, tok, reviews.rows(HELDOUT, seed=2)), 4)}}
    return shipped_folder.write_figures(out, figures, start)


def main(argv: list[str]) -> None:
    shipped_folder.main(__doc__, NAME, STEPS, train, argv, WEIGHTS)


if __name__ == "__main__":
    main(sys.argv[1:])
