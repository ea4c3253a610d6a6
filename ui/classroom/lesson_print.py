"""The printable lesson: each step's figure, drawn as its view draws it (the same viz function on the same model,
text and settings), for one page a teacher prints or saves as PDF. A figure is built once per server (the results
store). Steps whose view shows a table rather than a figure (tokens, the cache's size, pruning) get their table.

What it does not do: lay out the page (views/print_lesson.py) or say what is right (classroom.answers).
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from classroom import answers
from ui.runtime import cache

PRINT_WIDTH = 720  # px: an A4 or Letter page's text width at 96 dpi, less margins


def _sized(fig: go.Figure, height: int = 420) -> dict:
    fig.update_layout(width=PRINT_WIDTH, height=height, margin=dict(l=70, r=20, t=50, b=60), font=dict(size=13))
    return fig.to_dict()


@cache.memo("results")
def figure_dict(n: int) -> dict | None:
    """Step n's figure as a plain dict (None for a step shown by a table), as its view draws it: models from the
    server's model store, traces from its results store (the ones the views use)."""
    from viz import heads

    if n in (1, 2, 6):
        tr = cache.trace("bert", "cpu", "float32", answers.ANIMAL, None)
        if n == 1:
            return _sized(heads.head(tr.weights[0, 2], tr.tokens, tr.key_tokens, "L0 H2: each token's attention"))
        if n == 2:
            return _sized(heads.overview(tr.weights, tr.tokens, tr.key_tokens), 640)
        from analysis.rollout import rollout
        from viz.graph import matrices_figure

        return _sized(matrices_figure([("rollout over all layers", rollout(tr.weights, 0.5, "mean"))], tr.tokens))
    if n == 3:
        import torch

        from analysis import positional as P
        from viz.positional import rope_scores_heatmap

        q, k = torch.randn(2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))  # the tab's defaults
        return _sized(rope_scores_heatmap(P.rope_scores(q, k, 32).numpy()))
    if n == 5:
        from viz.seq2seq import alignment

        d = cache.model("seq2seq-bahdanau", "cpu", "float32").decode(answers.DATE)
        return _sized(alignment(d.source, d.output, d.weights, "Bahdanau attention while writing the date"), 480)
    if n == 9:
        from experiments.logit_lens import decompose
        from viz.next_token import dla_heatmap

        d = decompose(cache.model("gpt", "cpu", "float32"), answers.BRACKET)
        return _sized(dla_heatmap(d.heads, d.target), 360)
    if n == 10:
        from data.induction import twice

        tr = cache.trace("induction@1100", "cpu", "float32", twice(12), None)  # the step's checkpoint
        return _sized(heads.overview(tr.weights, tr.tokens, tr.key_tokens), 520)
    return None


def figure(n: int) -> go.Figure | None:
    """Step n's figure, a fresh Figure each call (None for a step shown by a table)."""
    found = figure_dict(n)
    return None if found is None else go.Figure(found, _validate=False)


def table(n: int) -> pd.DataFrame | None:
    """Step n's table where its view shows one instead of a figure, else None."""
    if n == 4:
        return pd.DataFrame(list(answers.rare_word_rows()))  # the rows step 4's question is answered from
    if n == 7:
        from analysis.kv import kv_bytes_per_token

        rows = [{"kv heads": kv, "bytes per token (float32)": kv_bytes_per_token(4, kv, 32, 4),
                 "KiB per 1,000 tokens": kv_bytes_per_token(4, kv, 32, 4) * 1000 // 1024} for kv in (8, 2, 1)]
        return pd.DataFrame(rows)  # the KV cache view's default decoder: 4 layers, 8 query heads of 32
    if n == 8:
        whole, left = answers.tiny_without_each_head()
        return pd.DataFrame([{"switched off": "none", "exact match": f"{whole:.0%}"}] +
                            [{"switched off": f"L{layer} H{h}", "exact match": f"{v:.0%}"}
                             for (layer, h), v in sorted(left.items())])
    return None
