"""Int8 quantization-aware training of the tiny sorting decoder; the defaults reproduce
models/weights/tiny_qat.safetensors.

Starts from the shipped fp32 weights (models/weights/tiny.safetensors), fake-quantizes every linear
layer as the int8 dynamic variant will run it (models/qat.py: weights per channel, activations per
token), and fine-tunes on the same kind of strings train/tiny.py trained on, with a tenth of
its learning rate. The file holds the float weights after training (models.variants quantizes them
at load) and, in its metadata, the config and a record: steps, seeds, and the held-out exact match
and answer loss of int8 PTQ from the fp32 weights against int8 from these (nothing time-dependent, so
a rerun writes the same tensors and metadata). Deterministic: fixed seeds, one CPU thread. From the repo root:

    python -m train.tiny_qat               # 500 steps, about 4 minutes on one busy core;
                                                  # writes models/weights/tiny_qat.retrained.safetensors
    python -m train.tiny_qat --overwrite   # the same, written over the shipped tiny_qat.safetensors
    python -m train.tiny_qat --steps 20 --out /tmp/q.safetensors   # a quick smoke run
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from data.sorting import HELDOUT_SEED, batch, training_strings, uniform_strings
from models import qat, variants
from models.tiny import read_weights

SEED, DATA_SEED = 1337, 8  # a data seed of its own: not the strings the fp32 weights were trained on
BATCH, LR, WARMUP = 256, 3e-4, 50
HELDOUT_N, HELD_MIN_LEN = 2000, 5
OUT = variants.qat_file("tiny")


def loss_fn(net, xy: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, y = xy
    logits, _ = net(x)                                          # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-1)


@torch.no_grad()
def int8_scores(net, heldout: list[str]) -> dict:
    """Exact match and answer loss of an int8 dynamic copy of `net` on the held-out strings."""
    q = variants.make(net, "int8_dynamic")
    x, y = batch(heldout)
    logits, _ = q(x)                                            # (B, T, V)
    exact = ((logits.argmax(-1) == y) | (y == -1)).all(dim=1).float().mean().item()
    return {"exact": exact, "loss": F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-1).item()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--out", default=str(OUT.with_suffix(".retrained.safetensors")),
                    help="where to write (default: beside the shipped weights, under a new name)")
    ap.add_argument("--overwrite", action="store_true", help="write over the shipped tiny_qat.safetensors")
    args = ap.parse_args()
    out = str(OUT) if args.overwrite else args.out

    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    data_gen = torch.Generator().manual_seed(DATA_SEED)
    heldout = uniform_strings(torch.Generator().manual_seed(HELDOUT_SEED), HELDOUT_N)
    excluded = {s for s in heldout if len(s) >= HELD_MIN_LEN}

    net, _ = read_weights()
    before = int8_scores(net, heldout)
    print(f"int8 PTQ from fp32: exact {100 * before['exact']:.2f}% loss {before['loss']:.3e}", flush=True)

    def batches():
        while True:
            yield batch([s for s in training_strings(data_gen, BATCH) if s not in excluded])

    t0 = time.time()

    def log(step: int, loss: float) -> None:
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step:5d} loss {loss:.3e} {time.time() - t0:.0f}s", flush=True)

    qat.prepare(net)
    qat.finetune(net, batches(), loss_fn, args.steps, LR, WARMUP, log)
    qat.convert(net)
    after = int8_scores(net, heldout)
    print(f"int8 from QAT weights: exact {100 * after['exact']:.2f}% loss {after['loss']:.3e}", flush=True)
    record = {"module": "net", "from": "tiny.safetensors", "steps": args.steps, "batch": BATCH, "lr": LR,
              "seed": SEED, "data_seed": DATA_SEED, "heldout_n": HELDOUT_N, "heldout_seed": HELDOUT_SEED,
              "int8_ptq_exact": before["exact"], "int8_ptq_loss": before['loss'],
              "int8_qat_exact": after["exact"], "int8_qat_loss": after['loss']}
    tensors = {k: v.contiguous() for k, v in net.state_dict().items()}
    save_file(tensors, out, metadata={"config": json.dumps(asdict(net.cfg)), "record": json.dumps(record)})
    print(f"wrote {out} after {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
