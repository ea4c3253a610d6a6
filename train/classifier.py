"""Train the small BERT sentiment classifier of models/classifier.py and save it as a folder.

    python -m train.classifier --out /tmp/clf          # 2 layers x 4 heads, a few seconds
"""
from __future__ import annotations

import argparse

import torch

from models.classifier import make_classifier

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    make_classifier(args.out, args.layers, args.heads, args.hidden, args.steps)
