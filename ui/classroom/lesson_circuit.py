"""The lesson's induction step against its ground truth: the circuit EAP finds on the trained `induction` model over
the Circuits view's built-in task (data.circuit_tasks.repeats: random syllables, then the first half of them again),
drawn as the Circuits view draws it, with one sentence computed from the edges: the best-ranked edge from a
previous-token head of layer 0 into the key input of an induction head of layer 1, and its rank among every edge
by |score| (1 is the strongest).

Which heads are previous-token and induction heads is read from their attention on the task's clean texts
(analysis.patterns: the weight on the previous token; on the token after an earlier copy of the query's own), each a
head with at least half of its layer's best score, never from the edges. Computed once per server (the results
store), on a job (its bar, and Cancel while it waits its turn among heavy requests); drawn under the Induction
view only while the lesson's induction step is on (views/induction.py calls `section`).

    found = find(models.load("induction"), repeats(PAIRS))    # .ranked .previous .induction .path .rank
    sentence(found)  # 'EAP ranks **L0H2 → L1H3.k** 2nd of its 81 edges ...'

What it does not do: search for a circuit beyond ranking edges (experiments.circuits) or draw (viz.circuits).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from analysis.patterns import behaviour_scores
from data.circuit_tasks import BUILT_IN, repeats
from experiments.circuits import edge_scores
from ui.classroom import lesson, links
from ui.runtime import cache, heavy
from ui.show import plot
from viz.circuits import graph_figure

MODEL = "induction"
PAIRS = 8   # pairs of the task; per pair 2 forward passes, a backward (counts 2) and an attention pass: 40 in all
TOP = 10    # edges drawn as the circuit
JOB = "lesson_circuit"


@dataclass(frozen=True)
class Found:
    ranked: pd.DataFrame          # every edge: sender, receiver, score; largest |score| first
    previous: dict[int, float]    # layer-0 previous-token heads -> their weight on the previous token
    induction: dict[int, float]   # layer-1 induction heads -> their weight on the token after the earlier copy
    path: tuple[str, str] | None  # ("L0H2", "L1H3.k"): the best-ranked edge between the two, None where none is
    rank: int | None              # its rank by |score|, 1 the strongest


def _strong(scores: np.ndarray) -> dict[int, float]:
    """Heads with at least half the best score: [0.36, 0.28, 0.97, 0.90] -> {2: 0.97, 3: 0.90}."""
    return {int(h): float(scores[h]) for h in np.flatnonzero(scores >= np.nanmax(scores) / 2)}


def heads(model, pairs) -> tuple[dict[int, float], dict[int, float]]:
    """The previous-token heads of layer 0 and the induction heads of layer 1, from attention averaged over the
    pairs' clean texts."""
    scores = [behaviour_scores(tr.weights, tr.tokens) for tr in (model.attend(clean) for clean, *_ in pairs)]
    previous = np.mean([s["previous token"][0] for s in scores], axis=0)   # (H,)
    induction = np.nanmean([s["induction"][1] for s in scores], axis=0)    # (H,)
    return _strong(previous), _strong(induction)


def find(model, pairs, progress=None) -> Found:
    """EAP's edges over `pairs` ranked, the heads, and the best-ranked path from a previous-token head into the key
    input of an induction head."""
    E = edge_scores(model, pairs, "eap", progress=progress)
    ranked = E.iloc[E.score.abs().argsort(kind="stable")[::-1]].reset_index(drop=True)
    previous, induction = heads(model, pairs)
    paths = {(f"L0H{p}", f"L1H{i}.k") for p in previous for i in induction}
    at = [i for i, edge in enumerate(zip(ranked.sender, ranked.receiver)) if edge in paths]
    path = (ranked.sender[at[0]], ranked.receiver[at[0]]) if at else None
    return Found(ranked, previous, induction, path, at[0] + 1 if at else None)


def _ordinal(n: int) -> str:
    """1 -> '1st', 2 -> '2nd', 12 -> '12th', 23 -> '23rd'."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _heads(found: dict[int, float], layer: int) -> str:
    return ", ".join(f"L{layer} H{h} ({v:.2f})" for h, v in sorted(found.items(), key=lambda kv: -kv[1]))


def sentence(found: Found) -> str:
    """What the circuit says about the lesson's question, in Markdown, every number from `found`."""
    n = len(found.ranked)
    heads_line = (f"Layer 0's previous-token heads: {_heads(found.previous, 0)}; layer 1's induction heads: "
                  f"{_heads(found.induction, 1)} (the weight on the previous token, and on the token after the "
                  "earlier copy, over the task's clean texts: other sequences than the knock-outs' above).")
    if found.path is None:
        return f"No edge runs from a previous-token head into the key input of an induction head. {heads_line}"
    (s, r), score = found.path, found.ranked.score[found.rank - 1]
    above = [f"{a} → {b}" for a, b in zip(found.ranked.sender[:found.rank - 1], found.ranked.receiver)]
    effect = "lowers the logit difference: the edge carries the answer" if score < 0 else "raises the logit difference"
    return (f"EAP ranks **{s} → {r}** {_ordinal(found.rank)} of its {n} edges by size"
            + (f" (above it only {', '.join(above)})" if 1 < found.rank <= 5 else "")
            + f"; score {score:+.2f}, patching it {effect}. The "
            f"previous-token head **L0 H{s[3:]}** writes into the **key input** of the induction head "
            f"**L1 H{r[3:].split('.')[0]}**, so the induction head finds the earlier copy through what the "
            f"previous-token head wrote. {heads_line}")


@cache.memo("results")
def circuit(pairs: int = PAIRS) -> Found:
    """find() on the `induction` model (CPU, float32, as the claim test loads it) over `pairs` pairs of the task,
    once per server."""
    return find(cache.model(MODEL, "cpu", "float32"), repeats(pairs))


def _run(progress):
    """The job (on its thread, no Streamlit): EAP's few passes take seconds, so its bar says what runs, not how far;
    ui.runtime.heavy keeps what it returns under circuit's key."""
    progress(0.05, "scoring every edge (EAP) and reading the heads' attention…")
    return circuit.uncached(PAIRS)


def section() -> None:
    """Under the Induction view while the lesson's induction step is on: the circuit, its sentence, and a way to
    open the Circuits view on the same task."""
    n = lesson.step_number()
    if n is None or lesson.LESSON[n - 1].view != "induction":
        return
    st.header("Ground truth: the circuit behind the induction head")
    st.caption(f"Edge attribution patching (EAP) on the trained model, over {PAIRS} pairs of the Circuits view's "
               f"task ({BUILT_IN[MODEL][1]}; the corrupted text replaces the first copy): every edge between the "
               "embedding, the heads' query, key and value inputs and the logits gets a score, the strongest "
               f"{TOP} are drawn.")
    if not circuit.peek(PAIRS)[0]:
        cache.model(MODEL, "cpu", "float32")  # loaded here, with its spinner, before the job's thread asks
    if (res := heavy.run(JOB, circuit.key(PAIRS), "Finding the circuit:", _run)) is None:  # once per server
        return
    shown = res.ranked.head(TOP).assign(score=lambda d: d.score.round(4))
    said = sentence(res)
    st.markdown(said)
    plot(graph_figure(shown, list(dict.fromkeys(res.ranked.sender)) + ["logits"]), "lesson-circuit", table=shown,
         alt=f"The induction model's circuit as a layered graph: the {TOP} strongest of {len(res.ranked)} edges. "
             + said.replace("**", ""))
    st.button("Open this task in Circuits", key="lesson_circuit_open", icon="🔌", on_click=links.request,
              args=("circuits", {"circ_task": "Built-in task", "circ_pairs": str(PAIRS), "circ_top": str(TOP)}),
              kwargs={"sidebar": {"model": MODEL}})
