"""Pruning your own model on your own rows, end to end: the same steps for the pruning view and `python -m prune`.

    tm = models.task_head.load("./my-sentiment")
    task = prepare(tm, read_table(data, "rows.csv", cap), "text", "label", None, Settings())
    check_budget(task, Settings())                 # ValueError with one sentence when over limits
    result = run_plan(task, Settings())            # experiments.prune_plan.Plan
    timing = prune_and_time(task, result.plan, Settings())
    check = export_and_check(task, result.plan, "PRUNED/")

Rows are split once (fixed seed) into rows that score the heads and held-out rows that measure the metric.
Work is counted before it starts, in rows through the model (a backward pass counts as two), and refused over
limits.current().pruning_forward_passes. The export check reloads the folder with transformers' own Auto class
for the head and compares it with the gated model in float64 on the cpu, so the difference it reports is the
slicing's (about 1e-15), not float32 summation order's.
Does not fine-tune after pruning.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass

import numpy as np
import torch

import limits
from data.labelled import LABEL_NAMES, PAIR_NAMES, TEXT_NAMES, Table, examples, guess, split
from experiments import prune_plan
from experiments.importance import gradient_importance
from experiments.own_task import OwnTask, build
from experiments.pruning import median_speed, where_saved
from limits.errors import UserError
from models.gates import gated, head_counts, mask
from models.prune import pruned_copy
from models.pruned_hf import export, load_pruned
from models.task_head import HEADS, TaskModel, nbytes, to_float64


@dataclass(frozen=True)
class Settings:
    keep: float = 0.9          # the plan keeps at least this share of the original metric
    step: float = 0.1          # share of all heads removed per step
    seeds: int = 3             # random orders on the curve
    max_length: int = 128      # tokens per row (longer rows are cut)
    batch: int = 16            # timing: rows per forward pass
    seq_len: int = 128         # timing: tokens per row (padded or cut to exactly this)
    score_share: float = 0.5   # share of rows that score the heads; the rest measure the metric
    global_norm: bool = False  # min-max over all heads after the per-layer l2 (changes colours, not the order)
    repeats: int = 7           # timing: interleaved runs per model
    warmup: int = 2


def columns(table: Table, kind: str) -> tuple[str, str | None, str | None]:
    """Best guesses for (text, pair, label) columns of a table for a head whose labels are of `kind`."""
    text = guess(table.columns, TEXT_NAMES, table.columns[0])
    label = None if kind == "none" else guess(table.columns, LABEL_NAMES, table.columns[-1])
    pair = guess(table.columns, PAIR_NAMES)
    return text, pair if pair not in (text, label) else None, label


def prepare(tm: TaskModel, table: Table, text: str, label: str | None, pair: str | None, s: Settings) -> OwnTask:
    """Your rows, checked and split, as the task of the model's head; ValueError with one sentence if unusable."""
    caps = limits.current()
    ex = examples(table, text, label, pair, tm.kind, tm.labels, max_rows=caps.pruning_rows)
    score, held = split(ex, s.score_share)
    return build(tm, score, held, min(s.max_length, caps.pruning_row_tokens, _max_tokens(tm)))


def _max_tokens(tm: TaskModel) -> int:
    from models.hf.common import embedded_positions

    return embedded_positions(tm.model, tm.tokenizer)


def token_choices(tm: TaskModel, choices: list[int], most: int | None = None) -> list[int]:
    """The tokens-per-row choices this model can take: those up to the positions it embeds and `most` (the smallest
    at least, cut to them): [32, 64] of [32, 64, 128, 256, 512] for a tiny BERT of 64 positions."""
    top = min(_max_tokens(tm), most) if most else _max_tokens(tm)
    return [c for c in choices if c <= top] or [min(choices[0], top)]


def timing_tokens(tm: TaskModel, asked: int) -> int:
    """The tokens per row timing really uses: `asked`, capped to the positions the model embeds (64 for a tiny BERT
    asked for 128)."""
    return min(asked, _max_tokens(tm))


def timing_words(t: dict, asked: int | None = None) -> tuple[str, str]:
    """prune_and_time's result in words, (shape, which way): its shape (saying when the tokens per row were capped
    below `asked`), which way the pruned model went ("1.63× slower" rather than "0.61× faster"), and a flag when the
    runs are noise: an IQR above its own median, or above the distance between the two medians."""
    shape = f"batch {t['batch']} × {t['seq_len']} tokens"
    if asked is not None and asked > t["seq_len"]:
        shape += f" (capped from the {asked} asked: the model embeds {t['seq_len']} positions)"
    r = t["speedup"]                                                 # full_ms / pruned_ms
    way = f"the pruned model {r:.2f}× faster" if r >= 1 else f"the pruned model {1 / r:.2f}× slower"
    iqrs, meds = (t["full_iqr_ms"], t["pruned_iqr_ms"]), (t["full_ms"], t["pruned_ms"])
    both = f"the IQRs ({iqrs[0]:.2f} and {iqrs[1]:.2f} ms)"
    if any(i > m for i, m in zip(iqrs, meds)):
        noisy = [k for k, (i, m) in enumerate(zip(iqrs, meds)) if i > m]
        said = (f"{both} exceed the medians ({meds[0]:.2f} and {meds[1]:.2f} ms)" if len(noisy) == 2 else
                f"the {('full', 'pruned')[noisy[0]]} model's IQR ({iqrs[noisy[0]]:.2f} ms) exceeds its median "
                f"({meds[noisy[0]]:.2f} ms)")
        way += (f", but this is noise: {said}, so the two cannot be told apart here (a larger batch, longer rows or "
                "a quieter machine would)")
    elif max(iqrs) > abs(meds[0] - meds[1]):
        gap, wide = abs(meds[0] - meds[1]), [k for k in (0, 1) if iqrs[k] > abs(meds[0] - meds[1])]
        said = f"{both} exceed" if len(wide) == 2 else \
            f"the {('full', 'pruned')[wide[0]]} model's IQR ({iqrs[wide[0]]:.2f} ms) exceeds"
        way += f", within noise: {said} the {gap:.2f} ms between the medians"
    return shape, way


def cost(task: OwnTask, s: Settings, steps: tuple[str, ...] = ("plan", "time", "export")) -> int:
    """Rows through the model the chosen steps may need at most (a backward pass counts as two)."""
    scorings, metrics = prune_plan.work(sum(head_counts(task.tm.model)), s.step, s.seeds)
    total = 0
    if "plan" in steps:
        total += 3 * task.n_score * scorings + task.n_eval * metrics
    if "time" in steps:
        total += 2 * (s.repeats + s.warmup) * s.batch * max(1, s.seq_len // 128)
    if "export" in steps:
        total += 2 * task.n_eval
    return total


def check_budget(task: OwnTask, s: Settings, steps: tuple[str, ...] = ("plan", "time", "export")) -> int:
    """The cost of the steps, or ValueError with one sentence when it is over limits."""
    need, cap = cost(task, s, steps), limits.current().pruning_forward_passes
    if need > cap:
        raise UserError(f"This run needs up to {need:,} rows through the model and one request here may use "
                        f"{cap:,}: use fewer rows, a larger step or fewer random seeds.")
    return need


def run_plan(task: OwnTask, s: Settings, progress=None):
    """Michel et al.'s iterative plan on your rows, with one-pass, reverse and random orders (prune_plan.plan)."""
    model = task.tm.model

    def score(at: dict) -> np.ndarray:
        return gradient_importance(model, task.loss, task.score, normalise=False, at=at)

    return prune_plan.plan(score, task.metric, head_counts(model), s.step, s.keep, task.higher_better, s.seeds,
                           global_norm=s.global_norm, progress=progress)


def timing_inputs(task: OwnTask, batch: int, seq_len: int) -> dict:
    """`batch` rows of your held-out data, padded or cut to exactly `seq_len` tokens."""
    ex = task.held_rows
    repeat = lambda xs: (xs * (batch // len(xs) + 1))[:batch]  # noqa: E731
    pairs = repeat(ex.pairs) if ex.pairs is not None else None
    enc = task.tm.tokenizer(repeat(ex.texts), pairs, truncation=True, max_length=seq_len, padding="max_length",
                            return_tensors="pt")
    return {k: v.to(task.tm.device) for k, v in enc.items()}


def prune_and_time(task: OwnTask, plan: dict, s: Settings, progress=None) -> dict:
    """The pruned copy timed against the full model at your batch size and length, and what it saved.
    progress(fraction) moves after every pair of runs."""
    full = task.tm.model
    pruned = pruned_copy(full, plan)
    inputs = timing_inputs(task, s.batch, timing_tokens(task.tm, s.seq_len))
    speed = median_speed(full, pruned, inputs, s.repeats, s.warmup, progress)
    (p_full, b_full), (p_pruned, b_pruned) = nbytes(full), nbytes(pruned)
    return dict(speed, batch=s.batch, seq_len=inputs["input_ids"].shape[1], device=task.tm.device,
                threads=torch.get_num_threads(), params_full=p_full, params_pruned=p_pruned,
                bytes_full=b_full, bytes_pruned=b_pruned, layers=where_saved(full, pruned, plan))


def _outputs(model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """(every logit the head outputs, its predictions) for one batch, at real tokens only."""
    out = model(**{k: v for k, v in batch.items() if k not in ("labels", "start_positions", "end_positions")})
    if hasattr(out, "start_logits"):
        logits = torch.stack([out.start_logits, out.end_logits], -1)                    # (B, T, 2)
        return logits.flatten(), logits.argmax(1).flatten()
    logits = out.logits                                                                  # (B, C) or (B, T, C)
    if logits.dim() == 3:
        logits = logits[batch["attention_mask"].bool()]                                  # (tokens, C)
    return logits.flatten(), logits.argmax(-1).flatten()


@torch.no_grad()
def export_and_check(task: OwnTask, plan: dict, folder: str) -> dict:
    """Export the pruned model with its head and tokenizer, reload it with from_pretrained of the head's Auto class,
    and compare it with the gated model on the held-out rows, both in float64 on the cpu."""
    tm = task.tm
    files = export(pruned_copy(tm.model, plan), plan, folder, tm.tokenizer)
    auto = next(a for end, (_, a, _) in HEADS.items() if tm.architecture.endswith(end))
    again = load_pruned(folder, "cpu", auto).to(torch.float64)
    ref = to_float64(tm.model)
    diff, same, total = 0.0, 0, 0
    with gated(ref, mask(head_counts(ref), plan)):
        for batch in task.held:
            batch = {k: v.cpu() for k, v in batch.items()}
            (want, p_want), (got, p_got) = _outputs(ref, batch), _outputs(again, batch)
            diff = max(diff, float((got - want).abs().max()))
            same, total = same + int((p_got == p_want).sum()), total + len(p_want)
    return {"files": files, "class": type(again).__name__, "auto": auto, "max_diff": diff, "same": same,
            "predictions": total, "reload_ok": same == total and diff < 1e-9}


def command(spec: str, data: str, text: str, label: str | None, pair: str | None, s: Settings,
            out: str = "PRUNED/") -> str:
    """The `python -m prune` line that does the same headless."""
    parts = ["python", "-m", "prune", "--model", spec, "--data", data, "--text-col", text]
    parts += ["--label-col", label] if label else []
    parts += ["--pair-col", pair] if pair else []
    parts += ["--keep", f"{s.keep:g}", "--step", f"{s.step:g}", "--seeds", str(s.seeds), "--max-length",
              str(s.max_length), "--batch", str(s.batch), "--seq-len", str(s.seq_len)]
    parts += ["--global-norm"] if s.global_norm else []
    return " ".join(shlex.quote(p) for p in parts + ["--out", out])

