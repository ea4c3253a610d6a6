"""induction: the shipped induction checkpoints scored again on fresh repeated random sequences.

For every checkpoint under models/weights/induction/ (quick: the first and the last): the best head's prefix
matching and the in-context learning score (loss on the repeat minus loss on the first copy), measured by
experiments.induction.measure on the EVAL_SEED sequences (256 of 48 syllables, never trained on); the last
checkpoint's two losses; the phase change (first step whose best layer-1 prefix matching reaches 0.3) and
whether every number equals what train/induction.py wrote in scores.json. Issue targets: best prefix matching
>= 0.5 at the last checkpoint and <= 0.1 at the first, and the repeat's loss at most half the first copy's.
"""
from __future__ import annotations

import time


def measure(quick: bool) -> dict:
    import torch

    from experiments.induction import measure as score
    from models.induction import read, scores, steps
    from viz.induction import phase_change

    shipped = steps()
    picked = [shipped[0], shipped[-1]] if quick else shipped
    record = scores()
    start, threads = time.perf_counter(), torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        measured = [score(read(s)[0]) for s in picked]
    finally:
        torch.set_num_threads(threads)
    best = [round(float(m.prefix.max()), 4) for m in measured]
    same = all(m.as_dict() == record["scores"][record["steps"].index(s)] for s, m in zip(picked, measured))
    last = measured[-1]
    return {"checkpoints": len(shipped), "steps": picked, "best_prefix_matching": best,
            "icl_score": [round(m.icl, 4) for m in measured],
            "loss_first_last": round(last.loss_first, 4), "loss_repeat_last": round(last.loss_repeat, 4),
            "jump_step": phase_change(picked, [float(m.prefix[-1].max()) for m in measured]),
            "equals_shipped_scores": same, "seconds": round(time.perf_counter() - start, 2)}
