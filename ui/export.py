"""Downloads: a trace's attention as .npz, tidy CSV and JSON; the image format of every figure's camera button.

The writers are plain functions of an AttentionTrace (tests read them back). `buttons` offers what is shown
(one head as CSV or JSON, one layer as compressed .npz) and the whole trace as compressed .npz, each with its
size stated before the click and built only when clicked: one head is small at any length, while the whole
trace as CSV would be ~500 MB at 400 tokens, so the whole trace is never offered as text, and in hosted mode
not at all above `limits.current().export_bytes`. Numbers are written at full float32 precision, so each file
parses back to exactly the weights. Figures download from plotly's modebar (camera button) as PNG at 3x scale
or as SVG, chosen once in the sidebar; there is no server-side image rendering.
"""
from __future__ import annotations

import csv
import io
import json
import re

import streamlit as st

import limits
from analysis.trace import AttentionTrace


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'"""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} GiB"


CSV_COLUMNS = ("layer", "head", "query_index", "query_token", "key_index", "key_token", "weight")
IMAGE_FORMATS = ("png", "svg")


def to_npz(trace: AttentionTrace, layer: int | None = None) -> bytes:
    """weights [L, H, Tq, Tk] float32 (or [1, H, Tq, Tk] of one layer), tokens, key_tokens and kind in one
    compressed .npz (no pickle)."""
    import numpy as np  # here, not at the top: the sidebar's picker below is on the app's first page, no array

    weights = trace.weights if layer is None else trace.weights[layer:layer + 1]
    buf = io.BytesIO()
    np.savez_compressed(buf, weights=weights, tokens=np.array(trace.tokens, dtype=str),
                        key_tokens=np.array(trace.key_tokens, dtype=str), kind=np.array(trace.kind),
                        layers=np.arange(trace.n_layers) if layer is None else np.array([layer]))
    return buf.getvalue()


def to_csv(trace: AttentionTrace, layer: int | None = None, head: int | None = None) -> str:
    """One row per (layer, head, query, key), of every head or only of `layer`/`head`; weights as repr of the
    float32 value, so they read back exactly."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    n_layers, n_heads = trace.weights.shape[:2]
    for l in range(n_layers) if layer is None else [layer]:
        for h in range(n_heads) if head is None else [head]:
            rows = trace.weights[l, h].tolist()  # (Tq, Tk) as Python floats, exact for float32
            for i, q in enumerate(trace.tokens):
                writer.writerows((l, h, i, q, j, k, rows[i][j]) for j, k in enumerate(trace.key_tokens))
    return out.getvalue()


def to_json(trace: AttentionTrace, layer: int | None = None, head: int | None = None) -> str:
    """The whole trace, weights nested [layer][head][query][key]; with layer and head, that head alone
    ([1][1][query][key], its indices under "layer" and "head")."""
    weights = trace.weights if layer is None else trace.weights[layer:layer + 1, head:head + 1]
    d = {"tokens": trace.tokens, "key_tokens": trace.key_tokens, "kind": trace.kind,
         "output": trace.output, "notices": list(trace.notices), "weights": weights.tolist()}
    if layer is not None:
        d |= {"layer": layer, "head": head}
    return json.dumps(d, ensure_ascii=False)


def estimated_bytes(trace: AttentionTrace, what: str) -> int:
    """Size of a download before it is built: 'head_csv', 'head_json', 'layer_npz' or 'npz' (compressed files
    at most their raw size, plus tokens)."""
    tq, tk = trace.weights.shape[2:]
    tokens = sum(len(t.encode()) + 4 for t in trace.tokens + trace.key_tokens)
    if what == "head_csv":
        avg = (sum(len(t) for t in trace.tokens) / max(tq, 1) + sum(len(t) for t in trace.key_tokens) / max(tk, 1))
        return int(tq * tk * (avg + 32))  # indices, commas and a float's repr (~12 digits)
    if what == "head_json":
        return tq * tk * 22 + tokens
    per_layer = trace.weights[0].nbytes
    return (per_layer if what == "layer_npz" else trace.weights.nbytes) + tokens


def buttons(trace: AttentionTrace, name: str, layer: int = 0, head: int = 0) -> None:
    """Download buttons for the shown head and layer and the whole trace, sizes stated; files named `<name>-...`."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "attention"  # 'hf:my bert' -> 'hf-my-bert'
    size = lambda what: human_bytes(estimated_bytes(trace, what))  # noqa: E731
    c1, c2, c3, c4 = st.columns(4)
    c1.download_button(f"L{layer} H{head} as a table (.csv, ~{size('head_csv')})",
                       lambda: to_csv(trace, layer, head), f"{name}-L{layer}-H{head}.csv", "text/csv",
                       key=f"{name}_csv", on_click="ignore", icon="📥")
    c2.download_button(f"L{layer} H{head} (.json, ~{size('head_json')})", lambda: to_json(trace, layer, head),
                       f"{name}-L{layer}-H{head}.json", "application/json", key=f"{name}_json", on_click="ignore",
                       icon="📥")
    c3.download_button(f"Layer L{layer}, all heads (.npz, ≤ {size('layer_npz')})", lambda: to_npz(trace, layer),
                       f"{name}-L{layer}.npz", "application/octet-stream", key=f"{name}_layer_npz",
                       on_click="ignore", icon="📥")
    whole, cap = estimated_bytes(trace, "npz"), limits.current().export_bytes
    if whole <= cap:
        c4.download_button(f"Every layer (.npz, ≤ {human_bytes(whole)})", lambda: to_npz(trace), f"{name}.npz",
                           "application/octet-stream", key=f"{name}_npz", on_click="ignore", icon="📥")
    else:
        c4.caption(f"Every layer at once would be {human_bytes(whole)}, over the {human_bytes(cap)} a download may "
                   "be here: take one layer at a time.")


def image_format() -> str:
    """The format the camera button saves figures in: 'png' (3x scale) or 'svg'."""
    fmt = st.session_state.get("image_format", "png")
    return fmt if fmt in IMAGE_FORMATS else "png"


def image_format_picker() -> None:
    """Sidebar control for the camera button's format."""
    st.radio("Figure downloads", IMAGE_FORMATS, key="image_format", horizontal=True, bind="query-params",
             help="The camera button above each figure saves it as a sharp PNG or as an SVG.")
