"""Small helpers every figure uses: safe, unique token labels, one colour scale, the layer × head grid layout."""
from __future__ import annotations

import html
from collections import Counter

from analysis.tokens import readable_all

COLORSCALE = "Viridis"


def token_labels(tokens: list[str]) -> list[str]:
    """Readable (analysis.tokens), escaped, unique axis labels, repeats marked by position:
    ['the','cat','the'] -> ['the ·0','cat','the ·2']; ['Ġthe', 'Ċ'] -> ['␣the', '⏎']"""
    shown = readable_all(tokens)
    counts = Counter(shown)
    return [html.escape(t or "∅") + (f" ·{i}" if counts[t] > 1 else "") for i, t in enumerate(shown)]


def labels_never_hidden(fig):
    """Turn off plotly's check of every tick label against the chart's edges (ticklabeloverflow, "hide past div"
    by default on numeric axes): it measures each label's box in the browser, about half the time of a page of
    heatmaps with token ticks. Margins already grow to fit the labels (automargin), so none is cut. Returns fig,
    changed in place."""
    for name in fig.layout:  # property names and the subplots' axes this figure has (xaxis2, ...): no values read
        if name.startswith(("xaxis", "yaxis")):
            fig.layout[name].ticklabeloverflow = "allow"
        elif name.startswith("coloraxis") and fig.layout[name].colorscale is not None:  # one in use
            fig.layout[name].colorbar.ticklabeloverflow = "allow"
    for trace in fig.data:
        if trace.type == "heatmap":
            trace.colorbar.ticklabeloverflow = "allow"
    return fig


def head_grid_layout(fig, n_layers: int, n_heads: int):
    """Lay out a figure with one marker per head: heads H0.. across the top, layers L0.. down, clickable."""
    fig.update_layout(
        showlegend=False, height=120 + 38 * n_layers, margin=dict(l=10, r=10, t=40, b=10), clickmode="event+select",
        xaxis=dict(tickvals=list(range(n_heads)), ticktext=[f"H{h}" for h in range(n_heads)], side="top",
                   range=[-0.6, n_heads - 0.4], showgrid=False, zeroline=False),
        yaxis=dict(tickvals=list(range(n_layers)), ticktext=[f"L{l}" for l in range(n_layers)],
                   range=[n_layers - 0.4, -0.6], showgrid=False, zeroline=False),
    )
    return fig


def text_on_diverging(values, top: float) -> list[str]:
    """A readable colour for each value's label on a diverging scale from -top to top (RdBu): white on the dark ends,
    near black in the pale middle. text_on_diverging([0.1, -0.9], 1.0) -> ['#111111', '#ffffff']"""
    return ["#ffffff" if top and abs(float(v)) / top > 0.55 else "#111111" for v in values]
