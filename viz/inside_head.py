"""Figures for the inside-one-head view: one heatmap per step, the √d_k entropy curves, the mask.

Pure functions from arrays to plotly Figures; they never run a model. Token labels go on numeric
axes through tickvals/ticktext (repeated tokens stay separate) and are HTML-escaped. Masked
scores (-inf) are drawn as gaps and say so on hover.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.tokens import readable, readable_all
from viz.common import LOWERS, RAISES, VERMILLION, escape

SQUARE = ("QKᵀ", "÷√d_k", "mask", "softmax")  # steps whose columns are key tokens
ROWS = {"X": "token (layer input)", "Q": "query token", "K": "key token", "V": "value token"}  # else "query token"
ANNOTATE_ROWS, ANNOTATE_COLS = 16, 8  # write numbers in the cells only where they stay legible
ROW_WIDTH_TICKS = 12  # dimension ticks a full-width panel labels; a panel sharing its row with n gets 12 / n
ROW_WIDTH_TOKENS = 36  # token labels a full-width panel's x axis holds; likewise divided


def _ticks(labels: list[str], most: int | None = None) -> dict:
    """Every label, or every s-th when there are more than `most` (hover still names each cell):
    40 labels, most 16 -> 0, 3, 6, ..."""
    stride = 1 if most is None else -(-len(labels) // most)
    shown = range(0, len(labels), stride)
    labels = readable_all(labels)
    return {"tickvals": list(shown), "ticktext": [escape(labels[i]) for i in shown]}


def _dim_ticks(n: int, most: int = ROW_WIDTH_TICKS) -> dict:
    """At most `most` labelled feature dimensions, a power-of-two step apart, upright: 384, 12 -> 0, 32, ...;
    32, 4 -> 0, 8, 16, 24."""
    stride = 1
    while -(-n // stride) > most:
        stride *= 2
    return {"tickvals": list(range(0, n, stride)), "ticktext": [str(j) for j in range(0, n, stride)], "tickangle": 0}


def _panel(name: str, values: np.ndarray, tokens: list[str], key_tokens: list[str] | None, per_row: int):
    """One step's heatmap trace, its axes and title, as plain dicts (validated once, by the figure). Rows are tokens
    (queries, keys or values, as the step holds them); columns are key tokens for the T x T steps and feature
    dimensions for X, Q, K, V and A·V. per_row: how many panels share the page's width, so a narrow panel labels
    fewer columns."""
    z = np.asarray(values, dtype=np.float64)
    masked = ~np.isfinite(z)
    z = np.where(masked, np.nan, z)
    square = name in SQUARE
    cols = (key_tokens or tokens) if square else [str(j) for j in range(z.shape[1])]
    probs = name == "softmax"
    row_title, col_title = ROWS.get(name, "query token"), "key token" if square else "dimension"
    shown_rows = np.array([escape(t) for t in readable_all(tokens)], dtype=object)  # byte-level pieces as text
    shown_cols = np.array([escape(t) for t in readable_all(cols)], dtype=object)
    custom = np.stack(np.broadcast_arrays(shown_rows[:, None], shown_cols[None, :]), axis=-1)  # (rows, cols, 2)
    # numbers are formatted by plotly (%{z:.3f}); only a step with masked cells sends a text per cell
    text = np.where(masked, "masked (−∞)", np.char.mod("%.3f", np.nan_to_num(z))) if masked.any() else None
    value = "%{text}" if text is not None else "%{z:.3f}"
    trace = dict(
        type="heatmap", z=z, customdata=custom, text=text,
        colorscale="Blues" if probs else "RdBu", reversescale=not probs,
        zmin=0 if probs else None, zmax=1 if probs else None, zmid=None if probs else 0,
        hovertemplate=f"{row_title} %{{customdata[0]}}<br>{col_title} %{{customdata[1]}}<br>{value}<extra></extra>",
        texttemplate=value if z.shape[0] <= ANNOTATE_ROWS and z.shape[1] <= ANNOTATE_COLS else None,
        textfont={"size": 9}, colorbar={"thickness": 10},
    )
    # key tokens: every label, upright text turned on its side, up to the view's window of 32 (a narrow panel
    # holds 32 labels side by side where it would hold a third of them slanted)
    xaxis = {**({**_ticks(cols, max(ROW_WIDTH_TOKENS // per_row, 32)), "tickangle": -90} if square else
                _dim_ticks(z.shape[1], ROW_WIDTH_TICKS // per_row)), "title": col_title}
    yaxis = {**_ticks(tokens), "autorange": "reversed", "title": row_title}
    return trace, xaxis, yaxis, f"{escape(name)}  ({z.shape[0]} × {z.shape[1]})", max(260, 22 * z.shape[0] + 120)


def step_row(names: tuple[str, ...], steps: dict, tokens: list[str], key_tokens: list[str] | None = None) -> go.Figure:
    """Several steps side by side in one figure, each panel a heatmap (titled with its shape, its
    own colour bar at its right edge): one chart for the browser to lay out instead of one per step. The rows are
    the same tokens in every panel, so only the first names them; the others say what their rows are in their
    titles ("K (12 × 32) · rows: key tokens")."""
    n, gap = len(names), 0.08
    width = (1 - gap * (n - 1)) / n
    panels = [_panel(name, steps[name], tokens, key_tokens, n) for name in names]
    layout = dict(height=max(p[4] for p in panels), margin={"l": 10, "r": 10, "t": 40, "b": 10}, annotations=[])
    data = []
    for i, (trace, xaxis, yaxis, title, _) in enumerate(panels):
        left, suffix = i * (width + gap), "" if i == 0 else str(i + 1)
        trace.update(xaxis=f"x{suffix}", yaxis=f"y{suffix}")
        trace["colorbar"] = {"thickness": 10, "x": left + width + 0.005, "xanchor": "left"}
        data.append(trace)
        layout[f"xaxis{suffix}"] = {**xaxis, "domain": [left, left + width], "anchor": f"y{suffix}"}
        if i:  # the same tokens, row for row, as the first panel's: labelled there only (fewer labels to lay out);
            # what the rows are goes in the panel's title (a y title here would sit on the colour bar to its left)
            title = f"{title} · rows: {yaxis['title']}s"
            yaxis = {"autorange": "reversed", "showticklabels": False}
        layout[f"yaxis{suffix}"] = {**yaxis, "anchor": f"x{suffix}"}
        layout["annotations"].append(dict(text=title, x=left + width / 2, y=1, xref="paper", yref="paper",
                                          xanchor="center", yanchor="bottom", showarrow=False, font={"size": 14}))
    return go.Figure(data=data, layout=layout)


def entropy_figure(result: dict) -> go.Figure:
    """Left: variance of q·k against d_k, with and without ÷√d_k. Right: mean softmax row entropy.
    Log axes with plain ticks: the measured d_k on x (1, 2, 4, ...), powers of ten for the variance."""
    d = [int(v) for v in result["d_k"]]
    fig = make_subplots(cols=2, subplot_titles=("variance of q·k", "softmax row entropy"), horizontal_spacing=0.1)
    for suffix, label, dash, color in (("unscaled", "QKᵀ", "solid", "#1f77b4"),
                                       ("scaled", "QKᵀ / √d_k", "dash", VERMILLION)):
        line = {"dash": dash, "color": color}
        fig.add_trace(go.Scatter(x=d, y=result[f"var_{suffix}"], name=label, line=line, legendgroup=suffix,
                                 mode="lines+markers"), row=1, col=1)
        fig.add_trace(go.Scatter(x=d, y=result[f"entropy_{suffix}"], name=label, line=line, legendgroup=suffix,
                                 mode="lines+markers", showlegend=False), row=1, col=2)
    fig.add_hline(y=float(result["max_entropy"]), line={"dash": "dot", "color": "gray"}, row=1, col=2,
                  annotation_text="uniform", annotation_position="bottom right")
    fig.update_xaxes(type="log", title="d_k (dimensions of q and k)", tickvals=d, ticktext=[str(v) for v in d])
    variances = np.concatenate([np.asarray(result["var_unscaled"]), np.asarray(result["var_scaled"])])
    decades = 10 ** np.arange(np.floor(np.log10(variances.min())), np.ceil(np.log10(variances.max())) + 1)
    fig.update_yaxes(type="log", title="variance", tickvals=decades, ticktext=[f"{v:,.0f}" if v >= 1 else f"{v:g}"
                                                                             for v in decades], row=1, col=1)
    fig.update_yaxes(title="entropy (nats)", rangemode="tozero", row=1, col=2)
    fig.update_layout(height=360, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def mask_effect(bidirectional: np.ndarray, causal: np.ndarray, tokens: list[str]) -> go.Figure:
    """softmax weights without and with the causal mask, side by side (rows: query, columns: key)."""
    fig = make_subplots(cols=2, subplot_titles=("no mask: every token sees every token",
                                               "causal mask: token i sees tokens ≤ i"), horizontal_spacing=0.08)
    shown = [escape(t) for t in readable_all(tokens)]
    names = np.array([[[q, k] for k in shown] for q in shown])  # (T, T, 2)
    for col, w in ((1, bidirectional), (2, causal)):
        fig.add_trace(go.Heatmap(z=np.asarray(w, dtype=np.float64), colorscale="Blues", zmin=0, zmax=1,
                                 showscale=col == 2, colorbar={"thickness": 10}, customdata=names,
                                 hovertemplate="query token %{customdata[0]}<br>key token %{customdata[1]}"
                                               "<br>%{z:.3f}<extra></extra>"),
                      row=1, col=col)
    fig.update_xaxes(**_ticks(tokens, ROW_WIDTH_TOKENS // 2), title="key token")
    fig.update_yaxes(**_ticks(tokens), autorange="reversed")
    fig.update_yaxes(title="query token", row=1, col=1)
    fig.update_layout(height=max(300, 22 * len(tokens) + 120), margin={"l": 10, "r": 10, "t": 60, "b": 10})
    return fig


def neuron_figure(q: np.ndarray, k: np.ndarray, query: str, key: str, scaled: float, step: str = "÷√d_k"
                  ) -> go.Figure:
    """q ⊙ k per dimension (bertviz's neuron view): the products, positive and negative, sum to q·k; `step` names
    the scale that made `scaled` of it (analysis.inside_head.scale_label)."""
    prod = np.asarray(q, np.float64) * np.asarray(k, np.float64)
    fig = go.Figure(go.Bar(x=list(range(len(prod))), y=prod,
                           marker_color=[RAISES if p > 0 else LOWERS for p in prod],
                           customdata=np.stack([q, k], axis=1),
                           hovertemplate="dimension %{x}: q %{customdata[0]:.3f} × k %{customdata[1]:.3f} "
                                         "= %{y:+.4f}<extra></extra>"))
    q_name, k_name = escape(readable(query)), escape(readable(key))
    fig.update_layout(title=f"q('{q_name}') · k('{k_name}') = Σ {prod.sum():+.3f}; {step} = {scaled:+.3f}",
                      xaxis_title="dimension d of the head", yaxis_title="q_d × k_d", height=320,
                      margin=dict(t=50, b=10))
    return fig
