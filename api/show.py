"""bertviz's head view and model view in a notebook, offline, and saving any figure or view to a file.

    v = api.head_view(trace)            # displays in JupyterLab, Notebook, VS Code and Colab: no CDN, no require.js
    api.save(v, "head_view.html")       # one self-contained page
    api.save(api.figures.heads(trace), "heads.html" | "heads.png" | "heads.svg")

A view is the app's offline build of bertviz (viz/bertviz_offline.py: d3 and bertviz's own script inlined, the
weights once as whole percents, a Content-Security-Policy that allows no fetch), shown in a sandboxed frame
(`<iframe srcdoc>`), so each view keeps its own page and script ids. A saved figure's HTML carries plotly.js
inside it (no network reference); .png and .svg are drawn by kaleido in a local Chromium (the optional extra
`notebook`, `make notebook`). What it does not: save a bertviz view as an image (it is an interactive page:
screenshot it), share one copy of d3 between the views of one notebook (each carries its own, ~250 kB).
"""
from __future__ import annotations

import html
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio

from analysis.trace import AttentionTrace
from limits.errors import UserError
from viz.bertviz_offline import head_view_html, height, model_view_html

__all__ = ["View", "head_view", "model_view", "save"]
CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 3},
          "modeBarButtonsToRemove": ["lasso2d", "select2d"]}  # the app's chart settings (ui/show.py)
IMAGES = {".png": 3, ".svg": 1}  # format -> scale: a sharp PNG for a paper, as the app's camera button saves


@dataclass(frozen=True)
class View:
    """One bertviz view: `page` is the whole self-contained HTML page; a notebook shows it in a frame `height`
    pixels high."""
    name: str   # "head view" or "model view"
    page: str
    height: int

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self.page, quote=True)}" title="bertviz {self.name}" '
                f'sandbox="allow-scripts" style="width:100%;border:0" height="{self.height}"></iframe>')

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        return {"text/html": self._repr_html_(), "text/plain": f"<bertviz {self.name}: {len(self.page):,} bytes>"}


def _trace(x, name: str) -> AttentionTrace:
    if not isinstance(x, AttentionTrace):
        raise ValueError(f"api.{name} draws an AttentionTrace (api.attend(model, text)), not a {type(x).__name__}: "
                         "pass the trace.")
    return x


def head_view(trace: AttentionTrace, layer: int = 0, hide: bool = False) -> View:
    """bertviz's head view of every layer and head (opened on `layer`; hover a token, click a colour to toggle a
    head), offline. hide: without [CLS]/[SEP]/<s>, rows renormalised, as the Heads view's toggle."""
    tr = _trace(trace, "head_view")
    if not 0 <= layer < tr.n_layers:
        raise UserError(f"Layer {layer} does not exist: this trace has layers 0 to {tr.n_layers - 1}.")
    n = max(len(tr.tokens), len(tr.key_tokens))
    return View("head view", head_view_html(tr, layer, hide=hide), height(n, tr.n_layers, tr.n_heads, "head_view"))


def model_view(trace: AttentionTrace, hide: bool = False) -> View:
    """bertviz's model view: a thumbnail per layer × head, click one for its detail, offline."""
    tr = _trace(trace, "model_view")
    n = max(len(tr.tokens), len(tr.key_tokens))
    return View("model view", model_view_html(tr, hide=hide), height(n, tr.n_layers, tr.n_heads, "model_view"))


def _chromium() -> str:
    """The Chromium kaleido drives: BROWSER_PATH, CHROMIUM (as the Makefile sets it), or one on PATH."""
    for path in (os.environ.get("BROWSER_PATH"), os.environ.get("CHROMIUM"), shutil.which("chromium"),
                 shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if path and os.access(path, os.X_OK):
            return path
    raise UserError("Saving an image needs a Chromium: install one (apt-get install chromium) or set BROWSER_PATH "
                    "to it.")


def save(figure_or_view, path) -> Path:
    """Write a figure (api.figures) or a bertviz view (api.head_view) to path: .html a standalone page with
    plotly.js inside it, .png or .svg a static image of a figure. Returns the path written."""
    path = Path(path)
    suffix = path.suffix.lower()
    if isinstance(figure_or_view, View):
        if suffix != ".html":
            raise UserError(f"A bertviz {figure_or_view.name} is an interactive page and saves as .html only, "
                            f"not {suffix or 'a file without a suffix'}.")
        path.write_text(figure_or_view.page, encoding="utf-8")
        return path
    if not isinstance(figure_or_view, go.Figure):
        raise ValueError(f"api.save writes one plotly Figure (api.figures.…) or a bertviz view (api.head_view), not "
                         f"a {type(figure_or_view).__name__}: save each figure of a list on its own.")
    if suffix == ".html":
        pio.write_html(figure_or_view, path, config=CONFIG, include_plotlyjs=True, include_mathjax=False,
                       full_html=True, auto_open=False)
        return path
    if suffix not in IMAGES:
        raise UserError(f"api.save writes .html, .png or .svg, not {suffix or 'a file without a suffix'}.")
    if importlib.util.find_spec("kaleido") is None:
        raise UserError(f"Saving {suffix} needs kaleido, the optional extra `notebook`: run make notebook "
                        "(or save as .html).")
    os.environ.setdefault("BROWSER_PATH", _chromium())
    pio.write_image(figure_or_view, path, format=suffix[1:], scale=IMAGES[suffix])
    return path
