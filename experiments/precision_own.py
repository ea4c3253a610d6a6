"""The precision check of a model with its own task head (models.task_head: a fine-tuned classifier, tagger, ...):
each variant judged by that head on the held-out rows of your labelled upload, the Pruning lab's task
(experiments.own_task.OwnTask, built by experiments.own.prepare) — not by a built-in task its head was dropped for.

    task = own.prepare(task_head.load("./my-sentiment"), table, "text", "label", None, own.Settings())
    probe = own_probe(task, batch=4)    # experiments.precision.Probe: outputs(variant) -> logits, choices, metric

Top-1 agreement: the same predicted label (tag, token, answer start) as fp32 on every scored row; cosine: of the
head's logits; metric: the head's own (accuracy, token accuracy, perplexity, exact match) by own_task.evaluate, the
function the Pruning lab measures plans with. Does not read files, make variants or time anything itself.
"""
from __future__ import annotations

import torch

from experiments import own
from experiments.own_task import IGNORE, METRICS, OwnTask, evaluate
from experiments.precision import Outputs, Probe
from models.devices import synchronize

TIMING_TOKENS = 128  # the timing batch's length, or the model's context where that is shorter


def head_logits(out, batch: dict, head: str) -> torch.Tensor:
    """The head's logits at every scored place, (M, C): a row's class, a word's tag, a hidden or next token; for
    question answering each row's start and end logits side by side."""
    if head == "question answering":
        return torch.cat([out.start_logits, out.end_logits], -1)               # (B, 2T)
    logits, labels = out.logits, batch["labels"]                               # (B, C) | (B, T, V), (B,) | (B, T)
    if head == "causal LM":
        logits, labels = logits[:, :-1], labels[:, 1:]
    return logits[labels != IGNORE]                                           # (M, C)


def own_probe(task: OwnTask, batch: int = 16) -> Probe:
    """The Probe of a TaskModel variant (its `.model` is the whole model with its head) on task's held-out rows;
    the first `batch` held-out rows, at most TIMING_TOKENS tokens each, make the timing batch."""
    head = task.tm.head
    name, higher, _ = METRICS[head]
    timed = own.timing_inputs(task, batch, own.timing_tokens(task.tm, TIMING_TOKENS))

    @torch.no_grad()
    def outputs(m) -> Outputs:
        logits = torch.cat([head_logits(m.model(**b), b, head) for b in task.held]).float().cpu()  # (M, C)
        return Outputs(logits, logits.argmax(-1), evaluate(m.model, task.held, head)[name])

    return Probe(f"your rows through the model's own {head} head", name.capitalize(),
                 f"{task.n_eval} held-out rows of your upload in the Pruning view", "the same prediction on every "
                 "scored row", outputs, lambda m: synchronize(task.tm.device, after=m.model(**timed)),
                 f"batch {timed['input_ids'].shape[0]} × {timed['input_ids'].shape[1]} tokens", higher)
