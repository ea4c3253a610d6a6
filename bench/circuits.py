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

NAMES = ["total", "x", "result", "items", "value", "count", "y", "best"]
CALLS = ["sum", "len", "max", "min", "sorted", "list", "str", "int"]
ARGS = ["values", "data", "a", "b"]


def bracket_pairs(n: int) -> list[tuple[str, str, str, str]]:
    """n pairs ("total = sum(values", "total = sum[values", ")", "]") from fixed names, the same every run."""
    combos = [(NAMES[i % 8], CALLS[(i + i // 8) % 8], ARGS[(i + i // 4) % 4]) for i in range(n)]  # distinct to 64
    return [(f"{v} = {f}({a}", f"{v} = {f}[{a}", ")", "]") for v, f, a in combos]


def induction_pairs(n: int = 8, seg: int = 10, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """Random syllables then their first half again; the corrupted text replaces the first copy."""
    import torch

    from data.induction import VOCAB

    gen = torch.Generator().manual_seed(seed)
    pairs = []
    for _ in range(n):
        ids = torch.randperm(len(VOCAB), generator=gen)[:2 * seg + 1].tolist()
        first, other, wrong = ids[:seg], ids[seg:2 * seg], ids[2 * seg]
        words = lambda xs: " ".join(VOCAB[i] for i in xs)  # noqa: E731
        pairs.append((words(first + first[:seg // 2]), words(other + first[:seg // 2]),
                      VOCAB[first[seg // 2]], VOCAB[wrong]))
    return pairs


def induction_path_rank(seg: int = 10) -> int:
    """The rank by |EAP| of L0 (previous-token head) -> L1 (induction head).k on `induction`; 1 is the top edge."""
    import numpy as np

    import models
    from experiments.circuits import edge_scores

    m = models.load("induction")
    pairs = induction_pairs(seg=seg)
    w = m.attend(pairs[0][0]).weights                                       # (L, H, T, T)
    T, half = w.shape[-1], seg // 2
    prev = int(np.argmax([np.diagonal(w[0, h], -1).mean() for h in range(w.shape[1])]))
    back = [(t, t - seg + 1) for t in range(T - half, T)]
    ind = int(np.argmax([np.mean([w[1, h, q, k] for q, k in back]) for h in range(w.shape[1])]))
    E = edge_scores(m, pairs, method="eap")
    order = E.iloc[E.score.abs().argsort(kind="stable")[::-1]]
    return 1 + list(zip(order.sender, order.receiver)).index((f"L0H{prev}", f"L1H{ind}.k"))


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
