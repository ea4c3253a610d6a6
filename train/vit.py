"""Train the built-in `vit` on scikit-learn's 8x8 digits and write models/weights/vit/ as a Hugging Face folder.

    python -m train.vit                        # about 5 minutes on one busy thread
    python -m train.vit --steps 50 --out /tmp/v  # a quick smoke run

The model is a standard `ViTForImageClassification` built from a config: an 8x8 one-channel image
cut into 2x2 patches (16 patch tokens, row by row, plus [CLS] first), 4 layers x 4 heads, d_model 64.
It trains on the 1,347 training digits of data/digits.py's fixed split, half of each batch shifted
by one pixel or none in each direction (zero fill) so that a digit drawn slightly off-centre is still
read, and is scored on the 450 held-out digits through the saved `ViTImageProcessor`, the same path a
user's image takes.

The image processor expects what data/digits.py gives: one channel, 8x8, values 0 (paper) to 16
(ink). It resizes to 8x8 (bilinear; a no-op for such an image), rescales by 1/16 and normalises
with mean 0.5 and std 0.5, so pixels reach the model in [-1, 1]. A user's PNG or JPEG goes through
`data.digits.to_digit_image` first (grayscale, ink bright, cropped, 8x8, 0-16), with a channel axis
added: `processor(image[..., None])`. Deterministic: one thread, fixed seeds, fixed step count;
figures go to <folder>/training.json (only "seconds" changes between runs).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import (
    AutoImageProcessor,
    AutoModelForImageClassification,
    ViTConfig,
    ViTForImageClassification,
    ViTImageProcessorPil,
)

from data import digits
from models import WEIGHTS
from train import shipped_folder

NAME = "vit"
SEED, BATCH, STEPS, LR, WEIGHT_DECAY, WARMUP = 0, 64, 4000, 2e-3, 0.05, 100
SHIFT = 0.5  # share of each batch moved by a pixel
SUBSET = 200  # held-out digits the tests recompute
MEAN, STD = 0.5, 0.5


def config() -> ViTConfig:
    """8x8 pixels, 2x2 patches, one channel; 4 layers x 4 heads, d_model 64: about 140 k parameters."""
    return ViTConfig(
        image_size=digits.SIZE, patch_size=2, num_channels=1, hidden_size=64, num_hidden_layers=4,
        num_attention_heads=4, intermediate_size=128, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        num_labels=10, id2label={i: str(i) for i in range(10)}, label2id={str(i): i for i in range(10)},
    )


def processor() -> ViTImageProcessorPil:
    """Digits' range (0..16, one channel) -> [-1, 1], as the model was trained."""
    return ViTImageProcessorPil(  # the ViTImageProcessor that needs only PIL, not torchvision
        do_resize=True, size={"height": digits.SIZE, "width": digits.SIZE}, do_rescale=True,
        rescale_factor=1 / digits.INK, do_normalize=True, image_mean=[MEAN], image_std=[STD],
    )


def normalise(images: torch.Tensor) -> torch.Tensor:
    """(B, 8, 8) in 0..16 -> (B, 1, 8, 8) as the processor writes it."""
    return ((images / digits.INK - MEAN) / STD)[:, None]


def shifted(images: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A SHIFT share of the images moved by -1, 0 or 1 pixel down and right, zero-filled. (B, 8, 8) -> (B, 8, 8)"""
    padded = F.pad(images, (1, 1, 1, 1))                                     # (B, 10, 10)
    dy, dx = torch.randint(0, 3, (2, images.shape[0]), generator=gen)
    keep = torch.rand(images.shape[0], generator=gen) >= SHIFT              # these stay where they are
    dy[keep], dx[keep] = 1, 1
    return torch.stack([p[y:y + digits.SIZE, x:x + digits.SIZE] for p, y, x in zip(padded, dy, dx)])


@torch.no_grad()
def accuracy(model, proc, images: np.ndarray, labels: np.ndarray) -> float:
    """Fraction right, each image through the image processor as a user's would be."""
    pixels = proc([im[..., None] for im in images], return_tensors="pt")["pixel_values"]  # (N, 1, 8, 8)
    predicted = model(pixel_values=pixels).logits.argmax(-1).numpy()
    return float((predicted == labels).mean())


def train(steps: int, out: Path) -> dict:
    start = time.time()
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    images, labels = digits.load()
    train_idx, test_idx = digits.split()
    x, y = torch.from_numpy(images[train_idx]), torch.from_numpy(labels[train_idx])
    model = ViTForImageClassification(config())
    print(f"{NAME}: {sum(p.numel() for p in model.parameters()):,} parameters, {len(x)} training digits", flush=True)
    model.train()

    def loss_of(step: int) -> torch.Tensor:
        pick = torch.randint(0, len(x), (BATCH,), generator=gen)
        logits = model(pixel_values=normalise(shifted(x[pick], gen))).logits  # (B, 10)
        return F.cross_entropy(logits, y[pick])

    shipped_folder.steps_of_adamw(list(model.parameters()), steps, loss_of, lr=LR, weight_decay=WEIGHT_DECAY,
                                  warmup=WARMUP, start=start)
    trained = time.time() - start
    model.save_pretrained(out)  # transformers 5 writes model.safetensors only
    processor().save_pretrained(out)
    shipped = AutoModelForImageClassification.from_pretrained(out, attn_implementation="eager").eval()
    proc = AutoImageProcessor.from_pretrained(out)
    figures = {
        "model": NAME, "parameters": sum(p.numel() for p in shipped.parameters()),
        "data": "sklearn.datasets.load_digits, split by data/digits.py (seed 0, 450 held out)",
        "steps": steps, "batch": BATCH, "seed": SEED,
        "train_accuracy": round(accuracy(shipped, proc, images[train_idx], labels[train_idx]), 4),
        "heldout": {"n": len(test_idx),
                    "accuracy": round(accuracy(shipped, proc, images[test_idx], labels[test_idx]), 4)},
        "subset": {"n": SUBSET, "accuracy": round(
            accuracy(shipped, proc, images[test_idx[:SUBSET]], labels[test_idx[:SUBSET]]), 4)},
        "train_seconds": round(trained),
    }
    return shipped_folder.write_figures(out, figures, start)


def main(argv: list[str]) -> None:
    shipped_folder.main(__doc__, NAME, STEPS, train, argv, WEIGHTS)


if __name__ == "__main__":
    main(sys.argv[1:])
