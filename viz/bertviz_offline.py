"""bertviz's head view and model view as one self-contained HTML page that draws with no network.

What it does: runs the installed bertviz package's own head_view.js / model_view.js, with
- d3 5.7.0 (the version bertviz asks a CDN for) inlined from the installed mpld3 package;
- require.js replaced by a shim: `requirejs([...], fn)` just calls fn($, d3);
- jQuery replaced by a shim of what bertviz calls: $(selector), append, val, text, change, on, empty, attr;
- the attention written once, as whole percents in bytes, base64 (what the eye can see in a
  line's opacity), from which the page builds bertviz's nested arrays and, for a BERT sentence
  pair, the A->A, B->B, A->B, B->A slices (bertviz writes those again at full precision);
- one change to bertviz's drawing: a line whose weight rounds to 0% is not created (its opacity
  would be 0 in every state); at 128 tokens that is half the head view's lines and most of the
  model view's, which is where the drawing time goes;
- a Content-Security-Policy that allows only these inline scripts (by hash) and no fetch at all,
  so text like `<img src=x onerror=...>` in a token can neither run nor reach out.
Tokens travel as JSON inside a non-executed <script type="application/json"> and are drawn by
d3's .text(), never as HTML.

What it does not: the neuron view (it needs queries and keys, not weights), dark mode, running a model.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from analysis.special import SPECIAL_TOKENS, hide_special
from analysis.tokens import readable_all
from analysis.trace import AttentionTrace

ROOT_ID = "bertviz"
LINE_APPENDS = {"head_view": 1, "model_view": 2}  # bertviz 1.4.1: .append("line") calls in each view
FONT = "font-family:'Helvetica Neue', Helvetica, Arial, sans-serif;"

# jQuery, as far as bertviz uses it: $(selector) or $("<option />"), then append/val/text/change/on/empty/attr
JQUERY_SHIM = r"""
function $(sel) {
  const els = sel === "<option />" ? [document.createElement("option")] : Array.from(document.querySelectorAll(sel));
  const q = {els: els,
    append(o) { els.forEach(e => o.els.forEach(c => e.appendChild(c))); return q; },
    val(v) { els.forEach(e => { e.value = v; }); return q; },
    text(t) { els.forEach(e => { e.textContent = t; }); return q; },
    change() { els.forEach(e => e.dispatchEvent(new Event("change"))); return q; },
    on(type, fn) { els.forEach(e => e.addEventListener(type, fn)); return q; },
    empty() { els.forEach(e => e.replaceChildren()); return q; },
    attr(k, v) { els.forEach(e => e.setAttribute(k, v)); return q; }};
  return q;
}
"""
# require.js, as far as bertviz uses it; BV_PARAMS rebuilds bertviz's `attention` list from the bytes
SHIM = JQUERY_SHIM + r"""
function requirejs(deps, fn) { fn($, d3); }
function bvLine(d) {  // bertviz's .append("line"), skipping invisible lines but keeping every index
  return d > 0 ? this.appendChild(document.createElementNS(d3.namespaces.svg, "line")) : null;
}
const BV_PARAMS = (function () {
  const data = JSON.parse(document.getElementById("bv-data").textContent);
  const bin = atob(data.bytes), u8 = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
  const [L, H, TQ, TK] = data.shape;
  function nested(r0, r1, c0, c1) {  // [layer][head][query][key] as bertviz expects, weights in 0..1
    const out = [];
    for (let l = 0; l < L; l++) { const heads = [];
      for (let h = 0; h < H; h++) { const rows = [];
        for (let i = r0; i < r1; i++) { const row = new Array(c1 - c0), base = ((l * H + h) * TQ + i) * TK;
          for (let j = c0; j < c1; j++) row[j - c0] = u8[base + j] / 100;
          rows.push(row); }
        heads.push(rows); }
      out.push(heads); }
    return out;
  }
  data.params.attention = data.parts.map(p => {
    const part = {name: p.name, left_text: data.left.slice(p.rows[0], p.rows[1]),
                  right_text: data.right.slice(p.cols[0], p.cols[1])};
    let attn = null;  // built on first use: the slices exist only when the user picks them
    Object.defineProperty(part, "attn", {
      get() { return attn || (attn = nested(p.rows[0], p.rows[1], p.cols[0], p.cols[1])); }});
    return part;
  });
  return data.params;
})();
"""


def _package_file(package: str, *parts: str) -> Path:
    """A file inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"The '{package}' package is not installed: make setup (pyproject.toml pins it).")
    return Path(next(iter(spec.submodule_search_locations)), *parts)


@lru_cache(maxsize=1)
def d3_source() -> str:
    """d3 5.7.0 from the installed mpld3 package."""
    src = _package_file("mpld3", "js", "d3.v5.min.js").read_text(encoding="utf-8")
    if "v5.7.0" not in src[:200]:
        raise ValueError("mpld3 no longer ships d3 5.7.0: pin mpld3==0.5.12 as pyproject.toml does.")
    return src


@lru_cache(maxsize=2)
def _bertviz_js(view: str) -> str:
    """bertviz's own <view>.js with its CDN require.config removed and PYTHON_PARAMS pointed at BV_PARAMS."""
    src = _package_file("bertviz", f"{view}.js").read_text(encoding="utf-8")
    src, n_header = re.subn(r"\A\s*/\*\*.*?\*\*/\s*", "", src, flags=re.S)  # change log with URLs
    src, n_config = re.subn(r"require\.config\(\{.*?\}\);\s*", "", src, count=1, flags=re.S)
    src, n_lines = re.subn(r'\.append\("line"\)', ".select(bvLine)", src)
    n_width = 1
    if view == "model_view":  # a fixed 970 px drawing: scale it down to the frame's width instead of cutting it off
        src, n_width = re.subn(r'\.attr\("width", DIV_WIDTH\)\s*\.attr\("height", config\.divHeight\)',
                               '.attr("viewBox", `0 0 ${DIV_WIDTH} ${config.divHeight}`)'
                               '.attr("preserveAspectRatio", "xMinYMin meet")'
                               '.style("width", "100%").style("max-width", DIV_WIDTH + "px").style("height", "auto")',
                               src)
    if n_header != 1 or n_config != 1 or n_lines != LINE_APPENDS[view] or n_width != 1 or "PYTHON_PARAMS" not in src:
        raise ValueError(f"bertviz's {view}.js has changed shape: pin bertviz==1.4.1 as pyproject.toml does.")
    return f"/* bertviz {view}.js (Jesse Vig, Apache-2.0), from the installed package */\n" + \
        src.replace("PYTHON_PARAMS", "BV_PARAMS")


def prettify(tokens: list[str]) -> list[str]:
    """Labels as every other figure writes them (analysis.tokens), plus bertviz's '</w>' dropped:
    ['Ġthe', '▁cat', 'sat</w>', 'Ċ'] -> ['␣the', '␣cat', 'sat', '⏎']"""
    return [t.removesuffix("</w>") for t in readable_all(tokens)]


def sentence_b_start(trace: AttentionTrace) -> int | None:
    """Index of sentence B's first token for a BERT pair ([CLS] A [SEP] B [SEP]), else None."""
    if trace.kind != "self" or "[SEP]" not in trace.tokens:
        return None
    start = trace.tokens.index("[SEP]") + 1
    return start if start < len(trace.tokens) else None


def without_special(trace: AttentionTrace) -> tuple[AttentionTrace, int | None]:
    """The trace with [CLS]/[SEP] rows and columns dropped and rows renormalised (analysis.special), and where
    sentence B now starts (None for one sentence), so the A/B choices survive the missing [SEP]."""
    b = sentence_b_start(trace)
    weights, tokens, keys = hide_special(trace.weights, trace.tokens, trace.key_tokens)
    if b is not None:
        b = sum(t not in SPECIAL_TOKENS for t in trace.tokens[:b])
    return AttentionTrace(tokens, keys, weights, trace.kind, trace.output, trace.notices), b


def _parts(trace: AttentionTrace, b: int | None = None) -> list[dict]:
    """bertviz's attention choices as row/column ranges into the one weight array; b: sentence B's first row
    when the trace cannot show it by a [SEP] (special tokens hidden)."""
    tq, tk = len(trace.tokens), len(trace.key_tokens)
    if trace.kind == "cross":
        return [{"name": "Cross", "rows": [0, tq], "cols": [0, tk]}]
    b = sentence_b_start(trace) if b is None else b
    if b is not None and not 0 < b < tq:
        b = None
    if b is None:
        return [{"name": None, "rows": [0, tq], "cols": [0, tk]}]
    a_, b_ = [0, b], [b, tq]
    return [{"name": "All", "rows": [0, tq], "cols": [0, tk]},
            {"name": "Sentence A -> Sentence A", "rows": a_, "cols": a_},
            {"name": "Sentence B -> Sentence B", "rows": b_, "cols": b_},
            {"name": "Sentence A -> Sentence B", "rows": a_, "cols": b_},
            {"name": "Sentence B -> Sentence A", "rows": b_, "cols": a_}]


def encode(weights: np.ndarray) -> str:
    """[L, H, Tq, Tk] floats in 0..1 -> base64 of uint8 whole percents, row-major. 0.123 -> 12"""
    return base64.b64encode(np.rint(np.clip(weights, 0, 1) * 100).astype(np.uint8).tobytes()).decode("ascii")


def _json_for_script(obj) -> str:
    """JSON that cannot close its <script> element or open a comment: <, >, & as \\u escapes."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _page(trace: AttentionTrace, view: str, params: dict, hide: bool) -> str:
    b = None
    if hide:
        trace, b = without_special(trace)
    parts = _parts(trace, b)
    data = {"shape": list(trace.weights.shape), "bytes": encode(trace.weights), "parts": parts,
            "left": prettify(trace.tokens), "right": prettify(trace.key_tokens), "params": params}
    scripts = [d3_source(), SHIM, _bertviz_js(view)]
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts)
    csp = f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'"
    layer = '' if view == "model_view" else '<label>Layer: <select id="layer"></select></label>'
    options = "".join(f'<option value="{i}">{p["name"]}</option>' for i, p in enumerate(parts))
    choose = f'<label>Attention: <select id="filter">{options}</select></label>' if len(parts) > 1 else ""
    title = "bertviz " + ("model view" if view == "model_view" else "head view")
    body = "".join(f"<script>{s}</script>\n" for s in scripts)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>\n'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n</head><body style="margin:0">\n'
            f'<div id="{ROOT_ID}" style="{FONT}"><span style="user-select:none">{layer} {choose}</span>'
            f"<div id='vis'></div></div>\n"
            f'<script type="application/json" id="bv-data">{_json_for_script(data)}</script>\n{body}</body></html>\n')


def head_view_html(trace: AttentionTrace, layer: int = 0, hide: bool = False) -> str:
    """bertviz's head view of every layer and head (pick the layer in the page), offline; hide: without
    [CLS]/[SEP], rows renormalised, as the Heads view's toggle."""
    return _page(trace, "head_view", {"default_filter": "0", "root_div_id": ROOT_ID, "layer": layer,
                                      "heads": None, "include_layers": list(range(trace.n_layers))}, hide)


def model_view_html(trace: AttentionTrace, hide: bool = False) -> str:
    """bertviz's model view: one thumbnail per layer x head, click one for its detail, offline; drawn to fit
    the frame's width (bertviz draws 970 px wide)."""
    return _page(trace, "model_view", {"default_filter": "0", "display_mode": "light", "root_div_id": ROOT_ID,
                                       "include_layers": list(range(trace.n_layers)),
                                       "include_heads": list(range(trace.n_heads)), "total_heads": trace.n_heads},
                 hide)


def height(n_tokens: int, n_layers: int, n_heads: int, view: str) -> int:
    """Pixels the view needs for n_tokens (the longer side drawn), by bertviz's own layout constants (head view:
    22.5 px a token); it reads sizes only, never the weights."""
    if view == "head_view":
        return int(n_tokens * 22.5 + 30 + 40)
    thumb = n_tokens * 7 * 12 / n_heads + 10
    return int(max(n_layers * thumb + 38, n_tokens * 18 + 55) + 30)
