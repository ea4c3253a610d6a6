"""A figure told in words, for a screen reader: what it shows and its strongest values, read from the figure's own data.

describe(fig) -> "Attention of L5 H11. Heatmap of 12 × 12 values from 0 to 0.62; largest 0.62 at 'it' (row),
'animal' (column)." It reads only what the figure holds (titles, axis titles and tick labels, each trace's values),
so the sentence cannot disagree with the picture. It does not explain the view: the text around the figure does.
"""
from __future__ import annotations

import base64
import html
import re

import numpy as np

from viz.common import CLICK_TARGETS

MAX_TRACES = 4  # series described one by one; the rest are counted
MAX_CELLS = 65_536  # a table of at most 256 × 256 numbers; a larger heatmap has its CSV download instead
MAX_CHARS = 600  # a screen reader reads all of it: a sentence, not a table (tables fold under the key figures)
_TAG = re.compile(r"<[^>]+>")


def plain(text) -> str:
    """Text of a title or label without plotly's HTML tags and entities: '<b>L0</b> &lt;s&gt;' -> 'L0 <s>'."""
    return html.unescape(_TAG.sub(" ", str(text or ""))).replace("\u00a0", " ").strip()


def number(x: float) -> str:
    """A value as a person reads it: 0.6213 -> '0.62', 1234.5 -> '1,234', 3e-05 -> '3e-05'."""
    if not np.isfinite(x):
        return str(x)
    if x == 0 or 0.01 <= abs(x) < 1000:
        return f"{x:.3g}" if abs(x) < 1 else f"{x:,.2f}".rstrip("0").rstrip(".")
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.1g}"


def values(data) -> np.ndarray | None:
    """A trace's numbers as a float array: lists, numpy arrays, or plotly's base64 typed arrays {'dtype', 'bdata'};
    None when there are none or they are not numbers (category labels)."""
    if data is None:
        return None
    if isinstance(data, dict) and "bdata" in data:
        arr = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        shape = data.get("shape")
        if shape:
            arr = arr.reshape([int(s) for s in str(shape).split(",")] if isinstance(shape, str) else shape)
        return arr.astype(float)
    try:
        arr = np.asarray(data, dtype=float)
    except (TypeError, ValueError):
        return None
    return arr if arr.size else None


def _labels(trace, axis, which: str, n: int) -> list[str]:
    """The label of each of n positions along a trace's x or y: its own categories, else the axis's tick text."""
    own = trace[which]
    if own is not None and len(own) == n and not isinstance(own, dict):
        return [plain(v) for v in own]
    ticks = values(axis.tickvals) if axis is not None else None  # numbers, maybe a typed array {dtype, bdata}
    if ticks is not None and axis.ticktext is not None:
        by_val = {float(v): plain(t) for v, t in zip(ticks.ravel(), axis.ticktext)}
        return [by_val.get(float(i), str(i)) for i in range(n)]
    return [str(i) for i in range(n)]


def _axis(fig, trace, which: str):
    name = (trace[f"{which}axis"] or which).replace("x", "xaxis").replace("y", "yaxis")
    return fig.layout[name] if name in fig.layout else None


def _cells(fig, trace, rows: int, cols: int) -> tuple[list[str], list[str]]:
    """The labels of a grid's rows (its y) and columns (its x)."""
    return _labels(trace, _axis(fig, trace, "y"), "y", rows), _labels(trace, _axis(fig, trace, "x"), "x", cols)


def _bar_values(fig, trace):
    """(values, one label each) of a bar series, horizontal or vertical; None when it holds no numbers."""
    horizontal = trace.orientation == "h"
    v = values(trace.x if horizontal else trace.y)
    if v is None or v.ndim != 1:
        return None
    return v, _labels(trace, _axis(fig, trace, "y" if horizontal else "x"), "y" if horizontal else "x", len(v))


def _shaded_grid(fig, trace):
    """A layer × head map drawn as coloured squares (x head, y layer): (colour values as a [rows, cols] grid, NaN
    where no square, row labels, column labels, squares); None for any other scatter."""
    x, y = values(trace.x), values(trace.y)
    shade = values(trace.marker.color) if "marker" in trace else None
    if y is None or not _grid(x, y) or shade is None or shade.shape != y.shape or not np.isfinite(shade).any():
        return None
    grid = np.full((int(y.max()) + 1, int(x.max()) + 1), np.nan)
    grid[y.astype(int), x.astype(int)] = shade
    return (grid, *_cells(fig, trace, *grid.shape), len(y))


def _heatmap(fig, trace) -> str | None:
    z = values(trace.z)
    if z is None or z.ndim != 2 or not np.isfinite(z).any():
        return None
    rows, cols = z.shape
    i, j = np.unravel_index(np.nanargmax(np.where(np.isfinite(z), np.abs(z), -np.inf)), z.shape)
    y_axis, x_axis = _axis(fig, trace, "y"), _axis(fig, trace, "x")
    ys, xs = _cells(fig, trace, rows, cols)
    row = plain(y_axis.title.text) if y_axis is not None and y_axis.title.text else "row"
    col = plain(x_axis.title.text) if x_axis is not None and x_axis.title.text else "column"
    return (f"heatmap of {rows} × {cols} values from {number(np.nanmin(z))} to {number(np.nanmax(z))}; "
            f"strongest {number(z[i, j])} at {row} '{ys[i]}', {col} '{xs[j]}'")


def _bars(fig, trace) -> str | None:
    found = _bar_values(fig, trace)
    if found is None or not np.isfinite(found[0]).any():
        return None
    v, labels = found
    top, low = int(np.nanargmax(v)), int(np.nanargmin(v))
    name = f"'{plain(trace.name)}' " if trace.name else ""
    out = f"{name}bars, {len(v)}: highest {number(v[top])} for '{labels[top]}'"
    return out + (f", lowest {number(v[low])} for '{labels[low]}'" if len(v) > 1 else "")


def _grid(x, y) -> bool:
    """Points placed on a grid of whole positions (a layer × head map drawn as squares), not a curve."""
    return (x is not None and x.shape == y.shape and np.isfinite(x).all() and np.isfinite(y).all()
            and (x >= 0).all() and (y >= 0).all() and (x == x.round()).all() and (y == y.round()).all())


def _points(fig, trace) -> str | None:
    y = values(trace.y)
    if y is None or y.ndim != 1 or not np.isfinite(y).any():
        return None
    kind = "line" if "lines" in (trace.mode or "lines") else "points"
    name = f"'{plain(trace.name)}' " if trace.name else ""
    if (shaded := _shaded_grid(fig, trace)) is not None:  # a layer × head map of squares
        grid, ys, xs, squares = shaded
        i, j = np.unravel_index(np.nanargmax(grid), grid.shape)
        return (f"{name}grid of {squares} cells coloured from {number(np.nanmin(grid))} to "
                f"{number(np.nanmax(grid))}; highest {number(grid[i, j])} at {ys[i]} {xs[j]}")
    x = values(trace.x)
    span = (f" over x from {number(np.nanmin(x))} to {number(np.nanmax(x))}"
            if x is not None and x.ndim == 1 and np.isfinite(x).any() else "")
    return f"{name}{kind} of {len(y)} values{span}, y from {number(np.nanmin(y))} to {number(np.nanmax(y))}"


_BY_TYPE = {"heatmap": _heatmap, "bar": _bars, "scatter": _points, "scattergl": _points}


def describe(fig) -> str:
    """One or a few sentences for a screen reader: the figure's title, its axes, and per series (at most MAX_TRACES)
    what it holds and its strongest value. A figure with no data says so."""
    parts = [plain(fig.layout.title.text)] if fig.layout.title.text else []
    axes = [plain(fig.layout[a].title.text) for a in ("xaxis", "yaxis") if a in fig.layout
            and fig.layout[a].title.text]
    if axes:
        parts.append("Axes: " + " against ".join(axes))
    said, kinds = [], []
    for trace in fig.data:
        if trace.meta == CLICK_TARGETS:  # markers a click selects, no data of their own
            continue
        kinds.append(trace.type)
        words = _BY_TYPE.get(trace.type, lambda f, t: None)(fig, trace)
        if words and len(said) < MAX_TRACES:
            said.append(words)
    if not fig.data:
        parts.append("An empty figure")
    elif said:
        parts.append("; ".join(said) + (f"; and {len(kinds) - len(said)} more series" if len(kinds) > len(said)
                                        else ""))
    else:
        parts.append(f"A figure of {len(kinds)} {kinds[0]} series")
    text = ". ".join(p.rstrip(".") for p in parts if p) + "."
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _peaks(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each head's largest weight and where it lies: weights [layers, heads, queries, keys] -> (peak [layers·heads],
    flat index into queries·keys [layers·heads])."""
    flat = weights.reshape(weights.shape[0] * weights.shape[1], -1)  # [layers·heads, queries·keys]
    where = flat.argmax(axis=1)
    return flat[np.arange(len(flat)), where], where


def strongest_heads(weights: np.ndarray, q_labels: list[str], k_labels: list[str], first_layer: int = 0,
                    top: int = 3) -> str:
    """The layer × head grid in words: its size and the `top` heads whose single largest weight is largest, each as
    "L5 H11: 'it' puts 0.62 on 'animal'". weights: [layers, heads, queries, keys] as the figure shows them (block
    maxima where it pools), q_labels and k_labels its rows' and columns' labels."""
    n_layers, n_heads, n_q, n_k = weights.shape
    peak, where = _peaks(weights)
    best = np.argsort(-peak, kind="stable")[:top]
    q_names, k_names = [plain(t) for t in q_labels], [plain(t) for t in k_labels]
    said = []
    for flat in best:
        layer, h = divmod(int(flat), n_heads)
        i, j = divmod(int(where[flat]), n_k)
        said.append(f"L{first_layer + layer} H{h}: '{q_names[i]}' puts {number(float(peak[flat]))} on '{k_names[j]}'")
    return (f"Attention of {n_layers} layers × {n_heads} heads, {n_q} rows of queries by {n_k} columns of keys. "
            f"The heads with the strongest single weights: {'; '.join(said)}.")


def heads_table(weights: np.ndarray, q_labels: list[str], k_labels: list[str], first_layer: int = 0, digits: int = 4):
    """The layer × head grid as a table, a row per head: its largest weight with its query and key, and the key it
    attends to most on average (the largest column mean). weights: [layers, heads, queries, keys] as the figure
    shows them, labels its rows' and columns'. A pandas DataFrame; not the full weights (the one-head table is)."""
    import pandas as pd

    n_layers, n_heads, _, n_k = weights.shape
    peak, where = _peaks(weights)
    q_names, k_names = [plain(t) for t in q_labels], [plain(t) for t in k_labels]
    favourite = weights.mean(axis=2).reshape(n_layers * n_heads, n_k)  # [layers·heads, keys]: mean over queries
    rows = []
    for flat in range(n_layers * n_heads):
        layer, h = divmod(flat, n_heads)
        i, j = divmod(int(where[flat]), n_k)
        top_key = int(favourite[flat].argmax())
        rows.append({"head": f"L{first_layer + layer} H{h}", "largest weight": round(float(peak[flat]), digits),
                     "query": q_names[i], "key": k_names[j], "key most attended (mean)": k_names[top_key],
                     "its mean weight": round(float(favourite[flat, top_key]), digits)})
    return pd.DataFrame(rows).set_index("head")


def as_table(fig, digits: int = 4):
    """The numbers of a figure's first heatmap (rows and columns named as on its axes) or of its bars (one column
    per series), as a pandas DataFrame a screen reader reads cell by cell; None for other figures."""
    import pandas as pd

    for trace in fig.data:
        if trace.type == "heatmap" and (z := values(trace.z)) is not None and z.ndim == 2 and z.size <= MAX_CELLS:
            ys, xs = _cells(fig, trace, *z.shape)
            return pd.DataFrame(z.round(digits), index=_unique(ys), columns=_unique(xs))
        if trace.type == "scatter" and (shaded := _shaded_grid(fig, trace)) is not None:
            grid, ys, xs, _ = shaded
            return pd.DataFrame(grid.round(digits), index=_unique(ys), columns=_unique(xs))
    bars = [t for t in fig.data if t.type == "bar"]
    if not bars:
        return None
    columns = {}
    for n, trace in enumerate(bars):
        if (found := _bar_values(fig, trace)) is None:
            continue
        v, labels = found
        columns[plain(trace.name) or f"series {n + 1}"] = pd.Series(v.round(digits), index=_unique(labels))
    return pd.DataFrame(columns) if columns else None


def as_tables(fig, digits: int = 4) -> dict:
    """Every table a figure holds, by name: each heatmap of a figure of several panels (rollout beside flow) named by
    its panel's title, its rows named as the first panel's where its own axis leaves them blank; else as_table's
    one table, named "". Empty when the figure holds none."""
    import pandas as pd

    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    if len(heatmaps) < 2:
        one = as_table(fig, digits)
        return {} if one is None else {"": one}
    tables, first_rows = {}, None
    for title, trace in zip(_panel_titles(fig, heatmaps), heatmaps):
        z = values(trace.z)
        if z is None or z.ndim != 2 or z.size > MAX_CELLS:
            continue
        rows, cols = _cells(fig, trace, *z.shape)
        if first_rows is not None and len(first_rows) == len(rows) and not any(r.strip() for r in rows):
            rows = first_rows
        first_rows = first_rows or rows
        tables[title] = pd.DataFrame(z.round(digits), index=_unique(rows), columns=_unique(cols))
    return tables


def _panel_titles(fig, traces) -> list[str]:
    """The title of each trace's panel: the subplot title over its x axis's span (the nearest above its y axis),
    else the trace's name, else 'panel n'."""
    notes = [a for a in fig.layout.annotations if a.text and a.xref == "paper" and a.x is not None]
    titles = []
    for n, trace in enumerate(traces, 1):
        (x0, x1), (_, y1) = [(_axis(fig, trace, w).domain or (0, 1)) if _axis(fig, trace, w) else (0, 1)
                             for w in ("x", "y")]
        over = [a for a in notes if x0 - 1e-6 <= a.x <= x1 + 1e-6 and (a.y or 0) >= y1 - 1e-6]
        best = min(over, key=lambda a: a.y - y1, default=None)
        titles.append(plain(best.text) if best else plain(trace.name) or f"panel {n}")
    return _unique(titles)


def _unique(labels: list[str]) -> list[str]:
    """Labels made unique for a table's index or header: a repeat gets its position, 'the (2)'."""
    seen = {}
    out = []
    for i, label in enumerate(labels):
        out.append(label if label not in seen else f"{label} ({i})")
        seen[label] = i
    return out
