"""The offline bertviz page: no network in it, the attention once and rounded, tokens never HTML."""
import base64
import hashlib
import json
import re

import numpy as np
import pytest

from analysis.trace import AttentionTrace
from viz.bertviz_offline import head_view_html, model_view_html, sentence_b_start

EVIL = "<img src=x onerror=alert(1)>"


def _trace(tokens, key_tokens=None, kind="self", layers=2, heads=3, seed=0):
    key_tokens = tokens if key_tokens is None else key_tokens
    logits = np.random.default_rng(seed).normal(size=(layers, heads, len(tokens), len(key_tokens))) * 3
    w = np.exp(logits)
    return AttentionTrace(list(tokens), list(key_tokens), (w / w.sum(-1, keepdims=True)).astype(np.float32), kind)


PAIR = _trace(["[CLS]", "the", "bank", "[SEP]", EVIL, "</script>", "[SEP]"])


def decode(data: str, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of viz.bertviz_offline.encode, to within 0.005 of the original weights: the page's script reads the
    bytes the same way (the app itself never decodes them)."""
    return np.frombuffer(base64.b64decode(data), np.uint8).reshape(shape).astype(np.float32) / 100


def _data(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="bv-data">(.*?)</script>', page, re.S).group(1))


@pytest.mark.parametrize("build", [head_view_html, model_view_html])
def test_no_outside_script_or_require_url(build):
    page = build(PAIR)
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)
    assert "require.config" not in page and "cdnjs" not in page and "paths:" not in page
    # the only URLs left are SVG/XML namespace names inside d3 and d3's own banner comment
    urls = set(re.findall(r"https?://[^\s\"')]+", page))
    assert urls <= {"http://www.w3.org/1999/xhtml", "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                    "http://www.w3.org/XML/1998/namespace", "http://www.w3.org/2000/xmlns/", "https://d3js.org"}, urls
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]


@pytest.mark.parametrize("build", [head_view_html, model_view_html])
def test_every_inline_script_is_allowed_by_hash_and_nothing_else_runs(build):
    page = build(PAIR)
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 3  # d3, the shims, bertviz's view
    allowed = set(re.findall(r"'sha256-([^']+)'", page))
    assert {base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() for s in scripts} == allowed


def test_attention_written_once_in_whole_percents():
    page = head_view_html(PAIR)
    data = _data(page)
    assert data["shape"] == list(PAIR.weights.shape)
    assert len(base64.b64decode(data["bytes"])) == PAIR.weights.size  # once, not once per slice
    back = decode(data["bytes"], tuple(data["shape"]))
    assert np.abs(back - PAIR.weights).max() <= 0.005 + 1e-7
    assert not re.search(r"\d\.\d{5,}", page.split("<script>")[0])  # no full-precision floats


def test_pair_gets_bertviz_slices_and_cross_gets_decoder_encoder():
    assert sentence_b_start(PAIR) == 4
    parts = _data(head_view_html(PAIR))["parts"]
    assert [p["name"] for p in parts][:2] == ["All", "Sentence A -> Sentence A"]
    assert parts[3] == {"name": "Sentence A -> Sentence B", "rows": [0, 4], "cols": [4, 7]}
    cross = _trace(["<s>", "12", "</s>"], ["june", "12", ",", "2020"], kind="cross")
    data = _data(model_view_html(cross))
    assert data["parts"] == [{"name": "Cross", "rows": [0, 3], "cols": [0, 4]}]
    assert data["left"] == cross.tokens and data["right"] == cross.key_tokens


def test_tokens_are_json_text_not_markup():
    page = head_view_html(PAIR)
    assert "<img" not in page and page.count("</script>") == 4  # 3 scripts + the data block
    assert _data(page)["left"][4:6] == [EVIL.replace(" ", "␣"), "</script>"]  # spaces shown, as in every label


def test_much_smaller_than_bertviz_own_page():
    import torch
    from bertviz import head_view

    theirs = head_view([torch.from_numpy(PAIR.weights[l][None]) for l in range(PAIR.n_layers)], PAIR.tokens,
                       sentence_b_start=4, html_action="return").data
    assert "cdnjs" in theirs  # bertviz's own needs the network
    assert len(head_view_html(PAIR)) - len(head_view_html(_trace(["a"], layers=1, heads=1))) < len(theirs)


def test_only_bertviz_line_creation_and_the_model_views_width_are_changed():
    from viz.bertviz_offline import _bertviz_js, _package_file

    for view, n in (("head_view", 1), ("model_view", 2)):
        ours, theirs = _bertviz_js(view), _package_file("bertviz", f"{view}.js").read_text()
        assert ours.count(".select(bvLine)") == n and '.append("line")' not in ours
        body = theirs[theirs.index("requirejs("):].replace('.append("line")', ".select(bvLine)").replace(
            "PYTHON_PARAMS", "BV_PARAMS")
        if view == "model_view":  # the svg keeps its 970 x divHeight drawing and scales to the frame
            sized = re.compile(r'\.attr\("width", DIV_WIDTH\)\s*\.attr\("height", config\.divHeight\)')
            assert len(sized.findall(body)) == 1
            body = sized.sub("", body)
            ours = ours.replace('.attr("viewBox", `0 0 ${DIV_WIDTH} ${config.divHeight}`)'
                                '.attr("preserveAspectRatio", "xMinYMin meet")'
                                '.style("width", "100%").style("max-width", DIV_WIDTH + "px")'
                                '.style("height", "auto")', "")
        assert ours[ours.index("requirejs("):] == body


def test_hidden_special_tokens_keep_the_sentence_pair_split():
    from viz.bertviz_offline import model_view_html, without_special

    tokens = ["[CLS]", "a", "b", "[SEP]", "c", "[SEP]"]
    w = np.full((1, 1, 6, 6), 1 / 6, dtype=np.float32)
    shown, b = without_special(AttentionTrace(tokens, tokens, w, "self"))
    assert shown.tokens == ["a", "b", "c"] and b == 2
    np.testing.assert_allclose(shown.weights.sum(-1), 1.0, rtol=1e-6)
    page = model_view_html(AttentionTrace(tokens, tokens, w, "self"), hide=True)
    data = json.loads(page.split('id="bv-data">')[1].split("</script>")[0])
    assert data["left"] == ["a", "b", "c"] and data["parts"][1] == {"name": "Sentence A -> Sentence A",
                                                                   "rows": [0, 2], "cols": [0, 2]}
