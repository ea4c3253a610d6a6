"""What real pruning saves and whether it is faithful: forward time of a pruned copy against the full
model, the largest gap to the gated model, and the exported files, in one report for the pruning view.

Timing alternates the two models after a warm-up; `speed` (built-in tasks) keeps each one's fastest run
(other work on a shared machine only ever adds time), `median_speed` (your model at your batch size and
length) reports medians and their spread. The faithfulness check runs in float64 on copies, so the gap it
reports is the slicing's, not float32 summation order's. in_original_numbers puts the page's scores in the
original model's head numbering (a pruned export loaded back holds fewer heads); timing_rows is the report's table.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from limits.errors import UserError
from models import prune
from models.devices import synchronize
from models.gates import head_counts
from models.prune import forward_output, gap_to_gated, pruned_copy
from models.pruned_hf import export_zip


@torch.no_grad()
def _seconds(model: nn.Module, inputs: dict | torch.Tensor) -> float:
    """Wall-clock seconds of one forward pass (waiting for the GPU when there is one)."""
    device = next(model.parameters()).device
    synchronize(device)
    start = time.perf_counter()
    synchronize(device, after=forward_output(model, inputs))
    return time.perf_counter() - start


def _inputs(tokenizer, sentences: list, device) -> dict | torch.Tensor:
    """Tokenizer output for sentences, or, with no tokenizer (tiny decoder), equal-length id lists as (B, T).
    A tokenizer without a padding token (GPT-2, Llama) gets every sentence cut to the shortest one's length."""
    if tokenizer is None:
        return torch.tensor(sentences, device=device)
    if tokenizer.pad_token is None:
        ids = tokenizer(sentences)["input_ids"]
        return {"input_ids": torch.tensor([x[:min(map(len, ids))] for x in ids], device=device)}  # (B, T)
    return dict(tokenizer(sentences, padding=True, return_tensors="pt").to(device))


def speed(full: nn.Module, pruned: nn.Module, tokenizer, sentences: list, batch_sizes=(1, 16),
          repeats: int = 5) -> list[dict]:
    """Forward time of the full and the pruned model per batch size: [{batch, full_ms, pruned_ms, speedup}].

    sentences: strings for the tokenizer, or equal-length token-id lists when tokenizer is None.
    Runs alternate between the two models after one warm-up each, and each keeps its fastest run:
    on a shared machine other work only ever adds time, so the minimum is the steadiest estimate.
    """
    device = next(full.parameters()).device
    rows = []
    for b in batch_sizes:
        batch = (sentences * (b // max(len(sentences), 1) + 1))[:b]
        inputs = _inputs(tokenizer, batch, device)
        _seconds(full, inputs), _seconds(pruned, inputs)
        runs = [(_seconds(full, inputs), _seconds(pruned, inputs)) for _ in range(repeats)]
        t_full, t_pruned = min(r[0] for r in runs), min(r[1] for r in runs)
        rows.append({"batch": b, "full_ms": 1000 * t_full, "pruned_ms": 1000 * t_pruned, "speedup": t_full / t_pruned})
    return rows


@dataclass(frozen=True)
class Report:
    """A plan cut out for real: the speed rows at batch 1 and 16 (speed), max |pruned - gated|, the export zip, both
    models' parameters (tied weights once), and the heads the copy has fewer (a head of the plan whose key/value group
    keeps other heads can stay as a silent head, zero output). Where the copy is no smaller, nothing is timed or
    exported: rows [] and zip b""."""

    rows: list[dict]
    gap: float
    zip: bytes
    params_full: int
    params_pruned: int
    heads_removed: int


def report(model: nn.Module, tokenizer, plan: dict, sentences: list) -> Report:
    """Prune a copy by `plan`, check it, time it and export it (Report); UserError, before anything is timed or
    written, when the cut copy is not the gated model (exact_gap)."""
    pruned = pruned_copy(model, plan)
    gap = exact_gap(model, pruned, plan, tokenizer, sentences)
    full, cut = _parameters(model), _parameters(pruned)
    removed = sum(head_counts(model)) - sum(head_counts(pruned))
    if cut >= full:
        return Report([], gap, b"", full, cut, removed)
    return Report(speed(model, pruned, tokenizer, sentences), gap, export_zip(pruned, plan, tokenizer), full, cut,
                  removed)


def _parameters(model: nn.Module) -> int:
    """The model's parameters, a tied weight counted once."""
    return sum(p.numel() for p in {p.data_ptr(): p for p in model.parameters()}.values())


EXACT = {torch.float64: 1e-9, torch.float32: 1e-4}  # slicing a layout it knows: ~1e-15 in float64, ~1e-5 in float32


def exact_gap(model: nn.Module, pruned: nn.Module, plan: dict, tokenizer, sentences: list) -> float:
    """float64_gap, or the gap of float32 copies on the cpu where the float64 forward fails (kernels that take no
    float64, as a mixture of experts' grouped matmul; a mask fill float64 overflows, as XGLM's; a buffer made in
    float32); UserError when it is over EXACT: the heads left compute something else once others are cut out (a norm
    over every head's queries or keys, as OLMo 2's; a differential pair of heads), so an export would not be the gated
    model, or when the cut copy does not run at all (a part of the attention sized for every head that the slicing
    does not know, as Inkling's)."""
    try:
        gap, dtype = float64_gap(model, pruned, plan, tokenizer, sentences), torch.float64
    except RuntimeError:
        full32, pruned32 = (copy.deepcopy(m).to("cpu", torch.float32) for m in (model, pruned))
        try:
            gap, dtype = gap_to_gated(full32, pruned32, plan, _inputs(tokenizer, sentences, "cpu")), torch.float32
        except (RuntimeError, IndexError, ValueError) as err:
            raise UserError(f"Cutting heads out of this {type(model).__name__} leaves a part of its attention that "
                            f"still expects every head ({type(err).__name__}), so the cut model would not run: only "
                            "its gates apply.") from err
    if not gap <= EXACT[dtype]:  # NaN in one model only is no match
        raise UserError(f"Cutting heads out of this {type(model).__name__} changes what its other heads compute "
                        f"(largest difference from the gated model {gap:.1e}: a norm or a pairing across heads), so "
                        "an export would not be the gated model: only its gates apply.")
    return gap


def float64_gap(model: nn.Module, pruned: nn.Module, plan: dict, tokenizer, sentences: list) -> float:
    """max |pruned - gated| on float64 copies of both on the cpu: slicing is exact, so this is ~1e-15 whatever
    the thread count, where float32 shows the summation order (up to ~1e-4 on a busy 2-core machine)."""
    full64, pruned64 = (copy.deepcopy(m).to("cpu", torch.float64) for m in (model, pruned))
    return gap_to_gated(full64, pruned64, plan, _inputs(tokenizer, sentences, "cpu"))


@torch.no_grad()
def _call_seconds(model: nn.Module, inputs: dict) -> float:
    device = next(model.parameters()).device
    synchronize(device)
    start = time.perf_counter()
    synchronize(device, after=model(**inputs))
    return time.perf_counter() - start


def median_speed(full: nn.Module, pruned: nn.Module, inputs: dict, repeats: int = 7, warmup: int = 2,
                 progress=None) -> dict:
    """Forward time of both models on the same inputs, medians of `repeats` interleaved runs after `warmup` each;
    the order within a pair alternates so that neither always runs second. {full_ms, pruned_ms, speedup, ...}
    progress(fraction), when given, is called after every pair of runs."""
    for w in range(warmup):
        _call_seconds(full, inputs), _call_seconds(pruned, inputs)
        if progress:
            progress((w + 1) / (warmup + repeats))
    runs = []
    for r in range(repeats):
        if progress and r:
            progress((warmup + r) / (warmup + repeats))
        pair = (_call_seconds(full, inputs), _call_seconds(pruned, inputs)) if r % 2 == 0 else \
            tuple(reversed((_call_seconds(pruned, inputs), _call_seconds(full, inputs))))
        runs.append(pair)
    t_full = float(np.median([a for a, _ in runs]))
    t_pruned = float(np.median([b for _, b in runs]))
    spread = lambda xs: float(np.percentile(xs, 75) - np.percentile(xs, 25))  # noqa: E731
    return {"full_ms": 1000 * t_full, "pruned_ms": 1000 * t_pruned, "speedup": t_full / t_pruned,
            "full_iqr_ms": 1000 * spread([a for a, _ in runs]), "pruned_iqr_ms": 1000 * spread([b for _, b in runs]),
            "repeats": repeats}


def where_saved(full: nn.Module, pruned: nn.Module, plan: dict) -> list[dict]:
    """Per layer: heads before and after `plan`, and the attention parameters removed (Q, K, V rows, output
    columns; a layer that lost every head keeps one silent head's worth)."""
    from models.prune import normalise
    from models.pruned_modeling import attention_layers

    plan = normalise(plan)
    rows = []
    for i, (n, a, b) in enumerate(zip(head_counts(full), attention_layers(full)[1], attention_layers(pruned)[1])):
        before, after = (sum(p.numel() for p in m.parameters()) for m in (a, b))
        rows.append({"layer": i, "heads": n, "kept": n - len(plan.get(i, [])), "params_saved": before - after})
    return rows


def in_original_numbers(net, grad: np.ndarray, conf: np.ndarray | None = None
                        ) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray | None]:
    """The page's heads in the original model's numbering, which traces, the Heads view and patching use (a pruned
    export loaded back holds fewer heads: its L0 position 1 may be the original L0 H2): (place: original (layer, head)
    -> (layer, position now), silent heads left out; grad [L, positions] with inf where no head, for ranking and
    the plans that gate or cut the model as it is; grad and conf [L, original heads], inf where there is none).
    grad comes by position (scores gate the model as it is); conf from traces, by original head already."""
    place = prune.original_places(net)
    now = np.full(grad.shape, np.inf)                                           # (L, positions)
    for layer, p in place.values():
        now[layer, p] = grad[layer, p]
    grad_o = prune.by_original(net, grad, 0 if conf is None else conf.shape[1])  # (L, original heads)
    return place, now, grad_o, None if conf is None else np.where(np.isfinite(grad_o), conf, np.inf)


def timing_rows(rows: list[dict]) -> list[dict]:
    """report()'s timings as the pruning view's table: milliseconds to 0.1, the speed-up to 0.01."""
    return [{"batch": r["batch"], "full (ms)": round(r["full_ms"], 1), "pruned (ms)": round(r["pruned_ms"], 1),
             "speedup": round(r["speedup"], 2)} for r in rows]
