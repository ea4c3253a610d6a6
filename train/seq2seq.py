"""Train the five seq2seq models deterministically on CPU and write them to models/weights/.

    python -m train.seq2seq                 # all five, about 20 min on one CPU thread, written
                                                   # beside the shipped files as *.retrained.safetensors
    python -m train.seq2seq --overwrite     # the same, written over the shipped files
    python -m train.seq2seq dates-luong     # just one

Dates (dates x {bahdanau, luong, none}): fresh examples from data/dates.py's training split each
step, at least 1000 steps, then stopping once exact match on 500 held-out dates reaches 99.5 % (checked
every 200 steps). Reversal (reverse x {attention, none}): random strings of 4-60 letters in batches
of similar length, a fixed 3000 steps. The learning rate falls linearly to a tenth over the max steps.
Afterwards it scores every date model on 1000 held-out dates and both reversal models at every
length, and writes those figures to models/weights/seq2seq_eval.json for the page's chart.
The same command gives the same weights: one thread, fixed seeds, no time-based stopping.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from data import dates, reverse
from models.seq2seq import EOS, MODELS, PAD, SOS, TASKS, WEIGHTS, Config, Seq2Seq, from_file, pad_batch

RUNS = {  # run name -> (registry name, config, max steps, batch size, peak learning rate)
    "dates-bahdanau": ("seq2seq-bahdanau", Config("dates", "bahdanau"), 4000, 64, 3e-3),
    "dates-luong": ("seq2seq-luong", Config("dates", "luong"), 4000, 64, 3e-3),
    "dates-none": ("seq2seq-none", Config("dates", "none"), 4000, 64, 3e-3),
    # luong for the long task: its decoder GRU runs over all steps at once, twice as fast as bahdanau here
    "reverse-attention": ("reverse-attention", Config("reverse", "luong", hidden=128), 3000, 32, 3e-3),
    "reverse-none": ("reverse-none", Config("reverse", "none", hidden=128), 3000, 32, 3e-3),
}
# dates: at least MIN_STEPS (the held-out score saturates within a few hundred steps; more makes the
# models steadier on odd inputs), then stop once EVAL_N held-out dates reach TARGET exact match
MIN_STEPS, EVAL_EVERY, EVAL_N, TARGET = 1000, 200, 500, 0.995


def date_pairs(rng: random.Random, n: int, split: str = "train") -> list[tuple[str, str]]:
    return [(s.lower(), iso) for s, iso in (dates.sample(rng, split) for _ in range(n))]


def reverse_batches(rng: random.Random, batch: int, group: int = 8):
    """Endless batches of reversal pairs; each draw of `group` batches is sorted by length so a batch
    holds similar lengths (less padding), then the batches are shuffled."""
    while True:
        pairs = reverse.dataset(batch * group, rng)
        pairs.sort(key=lambda p: len(p[0]))
        chunks = [pairs[i:i + batch] for i in range(0, len(pairs), batch)]
        rng.shuffle(chunks)
        yield from chunks


def loss_on(net: Seq2Seq, pairs: list[tuple[str, str]]) -> torch.Tensor:
    src, lengths = pad_batch([net.src_vocab.encode(s) for s, _ in pairs])
    tgt = [net.tgt_vocab.encode(t) for _, t in pairs]
    tgt_in, _ = pad_batch([[SOS] + t for t in tgt])                     # (B, T_out)
    tgt_out, _ = pad_batch([t + [EOS] for t in tgt])                     # (B, T_out)
    logits, _ = net(src, lengths, tgt_in)                                # (B, T_out, V)
    return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)


def predict(net: Seq2Seq, texts: list[str], batch: int = 250) -> list[str]:
    """Greedy outputs for many inputs, batched."""
    out = []
    for i in range(0, len(texts), batch):
        src, lengths = pad_batch([net.src_vocab.encode(t) for t in texts[i:i + batch]])
        ids, _ = net.greedy(src, lengths, TASKS[net.cfg.task]["max_out"])
        out += ["".join(net.tgt_vocab.decode(row)) for row in ids.tolist()]
    return out


def exact(net: Seq2Seq, pairs: list[tuple[str, str]]) -> float:
    return sum(p == t for p, (_, t) in zip(predict(net, [s for s, _ in pairs]), pairs)) / len(pairs)


def weights_path(name: str, overwrite: bool) -> Path:
    """The shipped file of registry model `name`, or a new one beside it ('.retrained') unless overwriting."""
    path = WEIGHTS / f"{MODELS[name][0]}.safetensors"
    return path if overwrite else path.with_suffix(".retrained.safetensors")


def train(run: str, overwrite: bool = False) -> None:
    name, cfg, steps, batch, lr = RUNS[run]
    torch.manual_seed(0)
    rng = random.Random(0)
    net = Seq2Seq(cfg)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    decay = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1 - 0.9 * i / steps)  # linear to lr/10
    held_out = date_pairs(random.Random(1), EVAL_N, "test") if cfg.task == "dates" else None
    stream = reverse_batches(rng, batch) if cfg.task == "reverse" else None
    start = time.time()
    for step in range(1, steps + 1):
        pairs = date_pairs(rng, batch) if stream is None else next(stream)
        net.train()
        loss = loss_on(net, pairs)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        decay.step()
        if step % EVAL_EVERY == 0:
            net.eval()
            acc = exact(net, held_out) if held_out else None
            score = "" if acc is None else f" held-out exact {acc:.3f}"
            print(f"{run} step {step} loss {loss.item():.4f}{score} {time.time() - start:.0f}s", flush=True)
            if acc is not None and step >= MIN_STEPS and acc >= TARGET:
                break
    path = weights_path(name, overwrite)
    state = {k: v.contiguous() for k, v in net.state_dict().items()}
    save_file(state, str(path), metadata={"config": json.dumps(asdict(cfg)), "steps": str(step)})
    print(f"{run}: wrote {path} after {step} steps, {time.time() - start:.0f}s", flush=True)


def evaluate(overwrite: bool = False) -> dict:
    """Held-out figures for every shipped model: the page's chart and the tests' expectations."""
    result = {"dates_exact": {}, "reverse": {"lengths": list(range(reverse.MIN_LEN, reverse.MAX_LEN + 1))}}
    test = date_pairs(random.Random(2), 1000, "test")
    for name, cfg, *_ in RUNS.values():
        net = from_file(weights_path(name, overwrite))
        if cfg.task == "dates":
            result["dates_exact"][name] = exact(net, test)
            continue
        pairs = reverse.by_length(20, seed=3)
        predicted = predict(net, [s for s, _ in pairs])
        exact_by, char_by = [], []
        for length in result["reverse"]["lengths"]:
            idx = [i for i, (s, _) in enumerate(pairs) if len(s) == length]
            e, c = reverse.accuracy([predicted[i] for i in idx], [pairs[i][1] for i in idx])
            exact_by.append(round(e, 4))
            char_by.append(round(c, 4))
        result["reverse"][name] = {"exact": exact_by, "char": char_by}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", help=f"runs to train: {', '.join(RUNS)} (default: all five)")
    ap.add_argument("--overwrite", action="store_true", help="write over the shipped weights and figures")
    args = ap.parse_args()
    if set(args.runs) - set(RUNS):
        ap.error(f"unknown runs {sorted(set(args.runs) - set(RUNS))}: choose from {', '.join(RUNS)}")
    torch.set_num_threads(1)
    for run in args.runs or list(RUNS):
        train(run, args.overwrite)
    if not all(weights_path(name, args.overwrite).exists() for name, *_ in RUNS.values()):
        print("some weights are missing: train all five to write the evaluation figures")
        return
    figures = evaluate(args.overwrite)
    name = "seq2seq_eval.json" if args.overwrite else "seq2seq_eval.retrained.json"
    (WEIGHTS / name).write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures["dates_exact"]))


if __name__ == "__main__":
    main()
