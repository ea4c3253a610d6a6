"""Downloads: a trace's attention as .npz, tidy CSV and JSON; the image format of every figure's camera button.

The three writers are plain functions of an AttentionTrace (tests read them back); `buttons` puts
them on a page, built only when clicked, since a 128-token trace is ~40 MB of CSV. Numbers are
written at full float32 precision, so each file parses back to exactly trace.weights.
Figures download from plotly's modebar (camera button) as PNG at 3x scale or as SVG, chosen once
in the sidebar; there is no server-side image rendering.
"""
from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import streamlit as st

from analysis.trace import AttentionTrace

CSV_COLUMNS = ("layer", "head", "query_index", "query_token", "key_index", "key_token", "weight")
IMAGE_FORMATS = ("png", "svg")


def to_npz(trace: AttentionTrace) -> bytes:
    """weights [L, H, Tq, Tk] float32, tokens, key_tokens and kind in one compressed .npz (no pickle)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, weights=trace.weights, tokens=np.array(trace.tokens, dtype=str),
                        key_tokens=np.array(trace.key_tokens, dtype=str), kind=np.array(trace.kind))
    return buf.getvalue()


def to_csv(trace: AttentionTrace) -> str:
    """One row per (layer, head, query, key); weights as repr of the float32 value, so they read back exactly."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    n_layers, n_heads, tq, tk = trace.weights.shape
    for layer in range(n_layers):
        for head in range(n_heads):
            rows = trace.weights[layer, head].tolist()  # (Tq, Tk) as Python floats, exact for float32
            for i, q in enumerate(trace.tokens):
                writer.writerows((layer, head, i, q, j, k, rows[i][j]) for j, k in enumerate(trace.key_tokens))
    return out.getvalue()


def to_json(trace: AttentionTrace) -> str:
    """The whole trace; weights nested [layer][head][query][key]."""
    return json.dumps({
        "tokens": trace.tokens, "key_tokens": trace.key_tokens, "kind": trace.kind,
        "output": trace.output, "notices": list(trace.notices), "weights": trace.weights.tolist(),
    }, ensure_ascii=False)


def from_json(text: str) -> AttentionTrace:
    """Inverse of to_json."""
    d = json.loads(text)
    return AttentionTrace(d["tokens"], d["key_tokens"], np.array(d["weights"], dtype=np.float32), d["kind"],
                          d["output"], tuple(d["notices"]))


def buttons(trace: AttentionTrace, name: str) -> None:
    """Download buttons for the trace, files named `<name>.npz|.csv|.json`; each file is built on click."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "attention"  # 'hf:my bert' -> 'hf-my-bert'
    c1, c2, c3 = st.columns(3)
    c1.download_button("Attention (.npz)", lambda: to_npz(trace), f"{name}.npz", "application/octet-stream",
                       key=f"{name}_npz", on_click="ignore", icon="📥")
    c2.download_button("Tidy table (.csv)", lambda: to_csv(trace), f"{name}.csv", "text/csv",
                       key=f"{name}_csv", on_click="ignore", icon="📥")
    c3.download_button("Trace (.json)", lambda: to_json(trace), f"{name}.json", "application/json",
                       key=f"{name}_json", on_click="ignore", icon="📥")


def image_format() -> str:
    """The format the camera button saves figures in: 'png' (3x scale) or 'svg'."""
    fmt = st.session_state.get("image_format", "png")
    return fmt if fmt in IMAGE_FORMATS else "png"


def image_format_picker() -> None:
    """Sidebar control for the camera button's format."""
    st.radio("Figure downloads", IMAGE_FORMATS, key="image_format", horizontal=True, bind="query-params",
             help="The camera button above each figure saves it as a sharp PNG or as an SVG.")
