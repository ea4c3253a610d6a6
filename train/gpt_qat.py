"""Int8 quantization-aware training of the built-in `gpt` (a Llama-style decoder); the defaults reproduce
models/weights/gpt_qat.safetensors.

Starts from the shipped fp32 weights (models/weights/gpt/), fake-quantizes every linear layer as the
int8 dynamic variant will run it (models/qat.py: weights per channel, activations per token; the LM
head too, which stays tied to the embedding), and fine-tunes on windows of the training text laid out
as train/gpt.py laid them out (<s> first), at a tenth of its final learning rate. The file holds the float
weights of the LlamaForCausalLM module after training (models.variants quantizes them at load; the tied
LM head is written as its own copy so the file loads with a strict state dict) and, in its metadata, a
record: steps, seeds, and on 8 held-out windows (those of experiments.precision's probe) the perplexity
and top-1 agreement with the original fp32 of int8 PTQ from the fp32 weights, of int8 from these, and of
these in fp32 (so what QAT adds beyond more training shows). Nothing time-dependent is recorded, so a
rerun writes the same tensors and metadata. Deterministic: fixed seeds, one CPU thread. From the repo root:

    python -m train.gpt_qat               # 300 steps, 3 to 5 minutes on one busy core;
                                                 # writes models/weights/gpt_qat.retrained.safetensors
    python -m train.gpt_qat --overwrite   # the same, written over the shipped gpt_qat.safetensors
    python -m train.gpt_qat --steps 5 --out /tmp/q.safetensors   # a quick smoke run
"""
from __future__ import annotations

import argparse
import json
import math
import random
import time

import torch
from safetensors.torch import save_file

from data import python_reference
from models import qat, variants
from train import gpt as train_gpt

SEED, WINDOWS = 1337, 8
LR, WARMUP = train_gpt.MIN_LR / 10, 10  # a tenth of where the fp32 run's learning rate ended
OUT = variants.qat_file("gpt")


@torch.no_grad()
def scores(module, x: torch.Tensor, y: torch.Tensor, key: str, ref: torch.Tensor | None = None) -> dict:
    """Perplexity of a `key` copy of `module` ("fp32" or "int8_dynamic") on windows x with labels y (B, T), and
    the share of scored positions whose next token equals ref's (the original fp32 choices), if given."""
    out = variants.make(module, key)(input_ids=x, labels=y)
    scored = y[:, 1:] != -100
    picks = out.logits[:, :-1].argmax(-1)[scored]
    got = {"perplexity": round(math.exp(out.loss.item()), 4), "picks": picks}
    if ref is not None:
        got["top1"] = round((picks == ref).double().mean().item(), 4)
    return got


def main() -> None:
    from models import load

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", default=str(OUT.with_suffix(".retrained.safetensors")),
                    help="where to write (default: beside the shipped weights, under a new name)")
    ap.add_argument("--overwrite", action="store_true", help="write over the shipped gpt_qat.safetensors")
    args = ap.parse_args()
    out = str(OUT) if args.overwrite else args.out

    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    gpt = load("gpt")
    tok, module = gpt.tokenizer, gpt.model
    ids = train_gpt.special_ids(tok)
    tokens = train_gpt.stream(tok, "bos", python_reference.documents("train"))
    hx = train_gpt.heldout_windows(tok, "bos")[:WINDOWS]                       # (8, 128)
    hy = train_gpt.labels(hx, ids)
    fp32 = scores(module, hx, hy, "fp32")
    ptq = scores(module, hx, hy, "int8_dynamic", fp32["picks"])
    before = {"int8_ptq_perplexity": ptq["perplexity"], "int8_ptq_top1": ptq["top1"],
              "fp32_perplexity": fp32["perplexity"]}
    print(f"before: {before}", flush=True)

    def batches():
        while True:
            x = torch.tensor([train_gpt.window(tokens, rng.randrange(len(tokens) - train_gpt.CONTEXT), "bos", ids)
                              for _ in range(train_gpt.BATCH)])                # (B, T)
            yield x, train_gpt.labels(x, ids)

    t0 = time.time()

    def log(step: int, loss: float) -> None:
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step:5d} loss {loss:.4f} {time.time() - t0:.0f}s", flush=True)

    qat.prepare(module)
    qat.finetune(module, batches(), lambda m, xy: m(input_ids=xy[0], labels=xy[1]).loss, args.steps, LR, WARMUP,
                 log)
    qat.convert(module)
    assert module.lm_head.weight is module.model.embed_tokens.weight  # still tied
    tuned = scores(module, hx, hy, "fp32", fp32["picks"])
    qat_int8 = scores(module, hx, hy, "int8_dynamic", fp32["picks"])
    after = {"int8_qat_perplexity": qat_int8["perplexity"], "int8_qat_top1": qat_int8["top1"],
             "fp32_after_qat_perplexity": tuned["perplexity"], "fp32_after_qat_top1": tuned["top1"]}
    print(f"after: {after}", flush=True)
    record = {"module": "model", "from": "gpt/model.safetensors", "steps": args.steps, "batch": train_gpt.BATCH,
              "lr": LR, "seed": SEED, "heldout_windows": WINDOWS, **before, **after}
    tensors = {k: v.detach().clone().contiguous() for k, v in module.state_dict().items()}  # tied: two copies
    save_file(tensors, out, metadata={"record": json.dumps(record)})
    print(f"wrote {out} after {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
