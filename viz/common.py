"""Small helpers every figure uses: safe, unique token labels, one colour scale, the layer × head grid layout."""
from __future__ import annotations

import html
from collections import Counter

from analysis.tokens import readable_all

COLORSCALE = "Viridis"
# Okabe & Ito's colours: told apart with every common colour-vision deficiency; no series is red against green
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#7f7f7f")
BLUE, ORANGE, GREEN, VERMILLION, PURPLE = PALETTE[:5]
RAISES, LOWERS = BLUE, VERMILLION  # one sign convention: positive blue, negative red, as DIVERGING draws it
DIVERGING = "RdBu"  # every diverging scale: negative red, positive blue
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")  # lines apart without their colour too
CHART_TEXT = "#555867"  # ticks, axis, legend and colour-bar titles on a light page: 7.0:1 on white (WCAG AA: 4.5)


def legend_below(fig, title: str, x: str = "", y: str = "", height: int = 340):
    """Title on top, legend under the plot: several series (or a narrow screen, where a legend's row wraps) never
    cover the title or squeeze the plot. Returns fig, with `height` plus room for the legend."""
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, height=height + 60,
                      margin=dict(l=60, r=20, t=60, b=110),  # room for a legend of two rows under the axis
                      legend=dict(orientation="h", x=0, y=-0.2 if x else -0.1, xanchor="left", yanchor="top"))
    return fig


CLICK_TARGETS = "click targets"  # the meta of click_targets' trace: it holds no data, so descriptions leave it out


def click_targets(fig, x: list, y: list, customdata: list, hover: list[str], size: float):
    """Make a heatmap's cells (or tiles of cells) clickable in a browser: plotly selects no heatmap cell, so a click on
    one gave Streamlit's on_select no point. Adds a transparent square marker at each target's centre (x[i], y[i] on the
    heatmap's axes) that a click selects: the point on_select reads is that marker's, with customdata[i]. Each
    marker carries its target's hover text (hover[i]); the heatmap's own hover is off, or a marker would hide it.
    size: the markers' side in pixels, a little under a target's, so that markers never overlap; every point of the
    plot is nearest one marker (hoverdistance -1), so a click anywhere in a target selects it. Returns fig."""
    import plotly.graph_objects as go

    fig.update_traces(hoverinfo="skip", hovertemplate=None, selector=dict(type="heatmap"))
    hidden = dict(marker=dict(opacity=0))  # selected or not, a marker is never drawn
    fig.add_trace(go.Scatter(x=x, y=y, customdata=customdata, hovertext=hover, hoverinfo="text", mode="markers",
                             marker=dict(symbol="square", size=max(6.0, size), opacity=0), selected=hidden,
                             unselected=hidden, showlegend=False, meta=CLICK_TARGETS))
    fig.update_layout(clickmode="event+select", hoverdistance=-1)
    return fig


def escape(text: str) -> str:
    """Text for a plotly label, title or hover: &, < and > escaped, since plotly reads them as markup; quotes kept,
    since plotly draws an entity it does not know (&quot;) as written. escape('a "<b>"') -> 'a "&lt;b&gt;"'"""
    return html.escape(text, quote=False)


def token_labels(tokens: list[str]) -> list[str]:
    """Readable (analysis.tokens), escaped, unique axis labels, repeats marked by position:
    ['the','cat','the'] -> ['the ·0','cat','the ·2']; ['Ġthe', 'Ċ'] -> ['␣the', '⏎']"""
    shown = readable_all(tokens)
    counts = Counter(shown)
    return [escape(t or "∅") + (f" ·{i}" if counts[t] > 1 else "") for i, t in enumerate(shown)]


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
        showlegend=False, height=max(230, 120 + 38 * n_layers),  # a colour bar stays readable on 1 or 2 layers
        margin=dict(l=10, r=10, t=40, b=10), clickmode="event+select",
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


def fonts(fig, cells: bool = True):
    """Every font of a figure's text: its title's, annotations', legend's, axes' ticks and titles, each trace's
    colour bar (a coloraxis's too) and, with cells, each trace's own text (numbers in cells, bar labels)."""
    lay = fig.layout
    yield lay.title.font
    yield lay.legend.font
    yield lay.legend.title.font
    yield from (a.font for a in lay.annotations)
    for name in lay:
        part = lay[name]
        if name.startswith(("xaxis", "yaxis", "polar")) and part is not None and hasattr(part, "tickfont"):
            yield part.tickfont
            yield part.title.font
        elif name.startswith("coloraxis") and part is not None:
            yield part.colorbar.tickfont
            yield part.colorbar.title.font
    for trace in fig.data:
        if cells and "textfont" in trace:
            yield trace.textfont
        shaded = "marker" in trace and "colorbar" in trace.marker and (trace.marker.showscale or (
            trace.marker.showscale is None and trace.marker.colorscale is not None))  # markers with a colour bar
        for bar in (trace["colorbar"] if "colorbar" in trace else None,  # a heatmap's; a scatter's or bar's markers'
                    trace.marker.colorbar if shaded else None):  # touching an unused one would draw an empty bar
            if bar is not None:
                yield bar.tickfont
                yield bar.title.font


def readable_text(fig, color: str = CHART_TEXT):
    """Give every chart text with no colour of its own a colour that reads on a light page: Streamlit's theme would
    draw ticks, axis and colour-bar titles in #808495 (3.7:1 on white, under WCAG AA's 4.5:1). Text in a trace's
    cells keeps plotly's own choice against each cell. Returns fig, changed in place."""
    for font in fonts(fig, cells=False):
        if font.color is None:
            font.color = color
    return fig
