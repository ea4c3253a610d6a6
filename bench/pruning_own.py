"""pruning_own: Michel et al.'s iterative plan on a small classifier trained here, timed and exported.

The classifier: BERT, 4 layers × 8 heads, hidden 128 (quick: 2 × 4, hidden 32), trained for 400 steps at lr 5e-4
(quick: 300 at 3e-3) on generated reviews whose label needs word order (data/reviews.py), with a word-level
tokenizer built here.
rows: labelled rows read from a CSV (half score the heads, half measure accuracy). importance_s: one gradient
importance pass over the scoring rows. iterative_s: the whole plan (iterative re-scoring to every head removed,
one-pass, reverse and 3 random orders). heads_removed_at_keep_0_9: heads in the recommended plan keeping 90 % of
held-out accuracy. speedup_batch16: full over pruned forward time at batch 16 × 64 tokens, medians of 15
interleaved runs after warm-up, one CPU thread. pruned_vs_gated_max_diff: largest |logit| difference between the
export reloaded with AutoModelForSequenceClassification.from_pretrained and the gated model, in float64 on the cpu.
reload_ok: that reload predicted every held-out row as the gated model did.
"""
from __future__ import annotations

import csv
import io
import tempfile
import time

import torch


def measure(quick: bool, steps: int | None = None, rows: int | None = None) -> dict:
    """steps: training steps, rows: labelled rows, instead of quick's or the full ones; with either (the smoke's
    sizes) the timing runs once."""
    from data import reviews
    from data.labelled import read_table
    from experiments import own
    from experiments.importance import gradient_importance
    from models import task_head
    from models.classifier import make_classifier

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # training and timing: on a shared machine a second thread mostly waits
    try:
        layers, heads, hidden, train, lr, n_rows = (2, 4, 32, 300, 3e-3, 120) if quick else (4, 8, 128, 400, 5e-4, 400)
        smaller = steps is not None or rows is not None
        steps, n_rows = steps or train, rows or n_rows
        with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as out:
            make_classifier(folder, layers, heads, hidden, steps, lr=lr)
            buf = io.StringIO()
            writer = csv.DictWriter(buf, ["text", "label"], lineterminator="\n")
            writer.writeheader()
            writer.writerows(reviews.rows(n_rows, seed=1))
            tm = task_head.load(folder)
            s = own.Settings(keep=0.9, batch=16, seq_len=64, repeats=1 if smaller else 5 if quick else 15)
            task = own.prepare(tm, read_table(buf.getvalue().encode(), "rows.csv", 10**7), "text", "label", None, s)
            start = time.perf_counter()
            gradient_importance(tm.model, task.loss, task.score)
            importance_s = time.perf_counter() - start
            start = time.perf_counter()
            res = own.run_plan(task, s)
            iterative_s = time.perf_counter() - start
            timing = own.prune_and_time(task, res.plan, s)
            check = own.export_and_check(task, res.plan, out)
    finally:
        torch.set_num_threads(threads)
    return {
        "rows": n_rows,
        "importance_s": round(importance_s, 3),
        "iterative_s": round(iterative_s, 2),
        "heads_removed_at_keep_0_9": sum(map(len, res.plan.values())),
        "speedup_batch16": round(timing["speedup"], 3),
        "pruned_vs_gated_max_diff": float(f"{check['max_diff']:.2e}"),
        "reload_ok": bool(check["reload_ok"]),
        "input": f"BERT {layers} layers × {heads} heads, hidden {hidden}, trained {steps} steps here; {n_rows} rows "
                 f"({task.n_score} score, {task.n_eval} held out); accuracy {res.base:.3f} with every head, "
                 f"{res.value:.3f} with the {res.recommended} plan, chance {task.chance:.3f}; timing batch 16 × "
                 f"{timing['seq_len']} tokens, {timing['repeats']} interleaved runs, 1 thread; parameters "
                 f"{timing['params_full']:,} -> {timing['params_pruned']:,}",
    }
