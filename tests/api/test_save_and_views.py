"""api.head_view / api.model_view display offline (a sandboxed frame around the app's offline bertviz page), api.save
writes standalone HTML with plotly.js inside it, `import api` alone brings no plotly, and every result a figure
cannot draw is a ValueError with one sentence. Drawing in a real Chromium: tests/browser/test_api_save_browser.py."""
import html
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

import api
from analysis.trace import AttentionTrace

ROOT = Path(__file__).resolve().parents[2]
NAMESPACES = {"http://www.w3.org/1999/xhtml", "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
              "http://www.w3.org/XML/1998/namespace", "http://www.w3.org/2000/xmlns/", "https://d3js.org"}


def _trace(kind="self", tokens=("[CLS]", "the", "bank", "was", "dirty", "[SEP]"), layers=2, heads=3):
    w = np.random.default_rng(0).random((layers, heads, len(tokens), len(tokens))) + 0.01
    return AttentionTrace(list(tokens), list(tokens), (w / w.sum(-1, keepdims=True)).astype(np.float32), kind)


def _one_sentence(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert text.endswith(".") and "\n" not in text and "Traceback" not in text, text
    return text


def test_import_api_alone_brings_no_plotly():
    code = ("import sys, api; api.heads; assert 'plotly' not in sys.modules and 'viz' not in sys.modules; "
            "api.figures; assert 'plotly' in sys.modules")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


@pytest.mark.parametrize("make", [api.head_view, api.model_view])
def test_a_bertviz_view_displays_in_a_sandboxed_frame_with_no_network_reference(make):
    v = make(_trace())
    shown = v._repr_html_()
    bundle = v._repr_mimebundle_()
    assert bundle["text/html"] == shown and "bertviz" in bundle["text/plain"]
    assert shown.startswith("<iframe srcdoc=") and 'sandbox="allow-scripts"' in shown
    assert html.unescape(re.search(r'srcdoc="([^"]*)"', shown).group(1)) == v.page  # the whole page, once
    assert not re.search(r"<script[^>]+src=", v.page) and not re.search(r"(src|href)\s*=\s*[\"']?https?:", shown)
    assert set(re.findall(r"https?://[^\s\"')&]+", v.page)) <= NAMESPACES  # XML namespaces only: nothing to fetch
    assert "connect-src" not in v.page and "default-src 'none'" in v.page


def test_a_view_saves_as_its_page_and_a_figure_as_standalone_html(tmp_path):
    t = _trace()
    v = api.head_view(t, layer=1)
    assert api.save(v, tmp_path / "view.html").read_text(encoding="utf-8") == v.page
    page = api.save(api.figures.heads(t), tmp_path / "heads.html").read_text(encoding="utf-8")
    assert "<script src=\"http" not in page and not re.search(r"<script[^>]+src=", page)
    assert len(page) > 3_000_000 and "Plotly.newPlot" in page  # plotly.js inside the file
    assert '"displaylogo": false' in page


def test_an_image_without_kaleido_says_how_to_get_it(tmp_path, monkeypatch):
    import importlib.util

    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "kaleido" else find(name, *a))
    with pytest.raises(ValueError) as err:
        api.save(go.Figure(), tmp_path / "x.png")
    assert "make notebook" in _one_sentence(err)


def test_bad_input_is_one_sentence(tmp_path):
    t = _trace()
    table = api.heads(t)
    cases = [
        (lambda: api.figures.dla(t), "api.next_token"),                       # a decoder's DLA from an encoder's trace
        (lambda: api.figures.lens(table), "api.next_token"),
        (lambda: api.figures.patching(t), "api.patching"),
        (lambda: api.figures.circuit(table), "api.circuit"),
        (lambda: api.figures.attribution(table), "api.attribution"),
        (lambda: api.figures.kv_cache(t), "api.kv_cache"),
        (lambda: api.figures.heads(table), "AttentionTrace"),
        (lambda: api.figures.head(t, 5, 0), "layers 0 to 1"),
        (lambda: api.figures.head(t, 0, 3), "heads 0 to 2"),
        (lambda: api.figures.rollout(_trace("cross")), "cross-attention"),
        (lambda: api.figures.layers(_trace("cross")), "cross-attention"),
        (lambda: api.figures.inside_head(object(), "text", 0, 0), "Q, K and V"),
        (lambda: api.head_view("The river bank"), "AttentionTrace"),
        (lambda: api.head_view(t, layer=2), "layers 0 to 1"),
        (lambda: api.save(api.head_view(t), tmp_path / "v.png"), ".html only"),
        (lambda: api.save(go.Figure(), tmp_path / "x.pdf"), ".html, .png or .svg"),
        (lambda: api.save([go.Figure()], tmp_path / "x.html"), "each figure"),
    ]
    for call, words in cases:
        with pytest.raises(ValueError) as err:
            call()
        assert words in _one_sentence(err)


def test_a_corpus_figure_names_the_behaviours_it_has():
    table = api.heads(_trace())  # has every behaviour column, but is not a corpus table
    with pytest.raises(ValueError) as err:
        api.figures.corpus(table, "previous token")
    assert "api.corpus" in _one_sentence(err)


def test_plotly_renderers_in_colab_and_the_notebook_fetch_nothing(monkeypatch):
    import plotly.io as pio

    monkeypatch.setattr(pio.renderers, "default", "colab")
    api.figures.offline_renderers()
    fig = api.figures.head(_trace(), 0, 0).to_dict()
    colab = pio.renderers["colab_offline"].to_mimebundle(fig)["text/html"]
    assert pio.renderers.default == "colab_offline" and len(colab) > 3_000_000  # plotly.js in the output itself
    notebook = pio.renderers["notebook"].to_mimebundle(fig)["text/html"]  # plotly.js: inlined once, on activation
    for page in (colab, notebook):
        assert not re.search(r"<script[^>]+src=", page) and "Plotly.newPlot" in page
    pio.renderers.default = "plotly_mimetype+notebook"  # what Jupyter gets: the notebook renderer is the new one
    assert not re.search(r"<script[^>]+src=", pio.renderers._build_mime_bundle(fig)["text/html"])
