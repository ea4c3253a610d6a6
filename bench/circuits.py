"""circuits: seconds for edge scores on the built-in `gpt` over bracket pairs, and the induction path's rank.

The task: "total = sum(values" against "total = sum[values" (one bracket swapped, as many tokens), answer ")",
wrong "]"; `pairs` such pairs from fixed lists of names. On them: EAP over every edge (eap_s), EAP-IG with 5 steps
(eap_ig_s), exact patching of EAP's top 50 edges one at a time (patching_top50_s; `top` of them under --smoke,
patched_edges says how many) and Spearman's ρ between the
two on those edges, faithfulness with EAP's top 5% of edges kept (corrupt ablation). On `induction`, over 8 pairs
of repeated random syllables (the first copy replaced in the corrupted text), the rank by |EAP| (1 is first) of the
edge from the layer-0 head that most attends to the previous token into the key of the layer-1 head that most
attends to the token after the earlier copy. Seconds: one call each after a warm-up, one torch thread.
Says which CPU it ran on.
"""
from __future__ import annotations

import time

from data.circuit_tasks import brackets as bracket_pairs
from data.circuit_tasks import repeats


def induction_pairs(n: int = 8, seg: int = 10, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """The Circuits view's induction task (data.circuit_tasks.repeats): random syllables then their first half
    again; the corrupted text replaces the first copy."""
    return repeats(n, seg=seg, seed=seed)


def induction_heads(model, pairs, seg: int = 10) -> tuple[list[int], list[int]]:
    """From attention alone, over every pair's clean text: the layer-0 heads that attend to the previous token and the
    layer-1 heads that attend to the token after the earlier copy, each at least half as much as the best such head
    (`induction` has two of each: one pair's attention can rank the two the other way round)."""
    import numpy as np

    prev, back = [], []
    for clean, *_ in pairs:
        w = model.attend(clean).weights                                     # (L, H, T, T)
        T = w.shape[-1]
        prev.append([np.diagonal(w[0, h], -1).mean() for h in range(w.shape[1])])
        back.append([np.mean([w[1, h, t, t - seg + 1] for t in range(T - seg // 2, T)]) for h in range(w.shape[1])])
    prev, back = np.mean(prev, axis=0), np.mean(back, axis=0)               # (H,), (H,)
    strong = lambda score: [int(h) for h in np.flatnonzero(score >= score.max() / 2)]  # noqa: E731
    return strong(prev), strong(back)


def induction_path_rank(seg: int = 10) -> int:
    """The best rank by |EAP| of an edge from a previous-token head in layer 0 into the key of an induction head in
    layer 1 on `induction`; 1 is the top edge."""
    import models
    from experiments.circuits import edge_scores

    m = models.load("induction")
    pairs = induction_pairs(seg=seg)
    prev, ind = induction_heads(m, pairs, seg)
    E = edge_scores(m, pairs, method="eap")
    order = list(zip(*E.iloc[E.score.abs().argsort(kind="stable")[::-1]][["sender", "receiver"]].to_numpy().T))
    return 1 + min(order.index((f"L0H{p}", f"L1H{i}.k")) for p in prev for i in ind)


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - start, 3)


def measure(quick: bool, pairs: int = 16, top: int = 50, steps: int = 5) -> dict:
    import torch

    import models
    from experiments.circuits import edge_scores, faithfulness
    from experiments.patching import rank_correlation

    m = models.load("gpt")
    task = bracket_pairs(pairs)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        edge_scores(m, task[:1])                                            # warm-up
        E, eap_s = _timed(lambda: edge_scores(m, task, method="eap"))
        _, eap_ig_s = _timed(lambda: edge_scores(m, task, method="eap-ig", steps=steps))
        ranked = E.iloc[E.score.abs().argsort(kind="stable")[::-1]]
        P, patching_s = _timed(lambda: edge_scores(m, task, method="patching", edges=ranked.head(top)))
        rho = rank_correlation(ranked.head(top).score.to_numpy(), P.score.to_numpy())
        kept = ranked.head(max(1, round(0.05 * len(E))))
        faith = faithfulness(m, task, kept)
        rank = induction_path_rank()
    finally:
        torch.set_num_threads(threads)
    return {"model": "gpt", "pairs": len(task), "edges": len(E), "eap_s": eap_s, "eap_ig_s": eap_ig_s,
            "patching_top50_s": patching_s, "patched_edges": len(P),
            "spearman_eap_vs_patching": round(rho, 3), "faithfulness_at_5pct": round(faith, 3),
            "induction_path_rank": rank, "cpu": torch.backends.cpu.get_cpu_capability(), "threads": 1}
