"""Bad input against every view, through app.py: each input gets a result or one clear sentence, never a traceback.

The views come from ui.views (those whose file exists), so a view merged later is covered too.
Each view runs all inputs in one AppTest session (models stay cached across reruns); a last good
sentence checks the session still serves after them. Each text goes into the sidebar and into every
text box of the view's own. A view whose page does not change at all with the text (home, say) gets
only the texts in SPOT_CHECK: the rest could not reach it.
"""
import hashlib
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import limits
from bench.browser import views

ROOT = Path(__file__).resolve().parents[2]
GOOD = "The cat sat on the mat."
VIEWS = [file for file, _, _ in views()]

# (name, sidebar text); each is typed into the sidebar's Text box
TEXTS = [
    ("empty", ""),
    ("whitespace", "   \n\t  \u00a0 "),
    ("newlines only", "\n\n\n"),
    ("20,000 characters", ("attention is all you need " * 800)[:20_000]),
    ("one 2,000-character word", "supercalifragilistic" * 100),
    ("emoji", "I ❤️ 🤖 attention 👍🏽 👨‍👩‍👧 🇺🇳"),
    ("3,000 emoji", "🤖" * 3000),
    ("CJK", "注意力就是你所需要的。東京は日本の首都です。"),
    ("Arabic right to left", "الانتباه هو كل ما تحتاجه"),
    ("bidi override", "abc \u202edlrow olleh\u202c def"),
    ("combining marks", "Z\u0337\u0322a\u0338\u0301l\u0336g\u0335o\u0334 cafe\u0301 n\u0303"),
    ("zero-width", "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom\u2060"),
    ("control characters and NUL", "a\x00b\x01c\x1b[31mred\x7f\x08\r\nend"),
    ("HTML and script", '<img src=x onerror=alert(1)> <script>alert(1)</script> <b onmouseover="x">'),
    ("Markdown", "# Title\n**bold** [link](javascript:alert(1)) `code` $x^2$ | a | b |\n---\n> quote"),
    ("literal special tokens", "[CLS] [SEP] [MASK] [PAD] [UNK] the [MASK] sat [SEP]"),
    ("digits only", "31415926535897932384626433"),
    ("one character", "a"),
    ("punctuation only", "?!...,;:'\"()[]{}"),
    ("plotly and LaTeX syntax", "<br> %{x} $$\\frac{1}{0}$$ \\begin{matrix} &nbsp; <sub>"),
]

SPOT_CHECK = {"empty", "20,000 characters", "HTML and script", "control characters and NUL"}


def _app() -> AppTest:
    return AppTest.from_file("../../app.py", default_timeout=180)


def _problems(at: AppTest, what: str) -> list[str]:
    """What is wrong with the page now: an exception, a traceback-like or multi-sentence message, no title."""
    if at.exception:
        return [f"{what}: exception {at.exception[0].message[:200]}"]
    found, said = [], set()
    for msg in [*at.error, *at.warning, *at.info]:
        text = str(msg.value)
        if "Traceback" in text or "Error:" in text or len(text) > 400 or text in said:
            found.append(f"{what}: not one clear sentence: {text[:200]!r}" + (" (twice)" if text in said else ""))
        said.add(text)
    if not at.title:
        found.append(f"{what}: the view drew nothing (no title)")
    return found


def _fingerprint(at: AppTest) -> str:
    """A digest of everything the view drew (every element's protobuf, figures included)."""
    digest = hashlib.sha256()

    def walk(node):
        if hasattr(node, "children"):
            for child in node.children.values():
                walk(child)
        elif getattr(node, "proto", None) is not None:
            digest.update(node.proto.SerializeToString())

    walk(at.main)
    return digest.hexdigest()


def _reads_text(at: AppTest) -> bool:
    """Whether the view draws anything differently for another sidebar text."""
    _set_text(at, GOOD)
    before = _fingerprint(at)
    _set_text(at, "Zebras eat grass quickly.")
    return _fingerprint(at) != before


def _set_text(at: AppTest, text: str, text_b: str = "") -> None:
    """Type text into the sidebar's Text box and into every text box the view has of its own, then rerun.

    A view's own boxes get it without their max_chars: a browser enforces that, the server does not.
    """
    at.sidebar.text_area(key="text").set_value(text)
    at.sidebar.text_input(key="text_b").set_value(text_b)
    for box in [*at.main.text_input, *at.main.text_area]:
        box.set_value(text)
    at.run()


def _set_model(at: AppTest, model: str, spec: str = "") -> None:
    at.sidebar.selectbox(key="model").set_value(model).run()
    if model == "hf:":
        at.sidebar.text_input(key="hf_spec").set_value(spec).run()


def _corrupt_model(folder: Path) -> str:
    """A folder that looks like a model (config.json) but whose model.safetensors is garbage."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 32,
                                                     "num_hidden_layers": 1, "num_attention_heads": 2}))
    (folder / "model.safetensors").write_bytes(b"\xff\x00not a safetensors file" * 50)
    return str(folder)


# over ~5 s each on 2 cores (each bad input reruns the view's models): in the slow group, which CI also runs
HEAVY = {"views/precision.py", "views/positional.py", "views/sparse.py", "views/inside_head.py", "views/kv_cache.py",
         "views/pruning.py", "views/seq2seq.py", "views/attribution.py",  # Attribution: 31 s
         "views/tiled.py", "views/heads.py", "views/corpus.py", "views/print_lesson.py", "views/compare.py"}


@pytest.mark.parametrize("view", [pytest.param(v, marks=pytest.mark.slow) if v in HEAVY else v for v in VIEWS])
def test_every_view_survives_bad_input(view, tmp_path, monkeypatch):
    monkeypatch.delenv(limits.ENV, raising=False)
    at = _app().run()
    at.switch_page(view).run()
    problems = _problems(at, "defaults")
    reads_text = _reads_text(at)
    for name, text in TEXTS:
        if not reads_text and name not in SPOT_CHECK:
            continue
        _set_text(at, text)
        problems += _problems(at, name)
    _set_text(at, GOOD, text_b="🤖 <script>alert(1)</script> [SEP]")
    problems += _problems(at, "second sentence with emoji, HTML and [SEP]")
    _set_text(at, GOOD)
    for model, spec, name in [("hf:", "./nope", "missing model hf:./nope"),
                              ("hf:", _corrupt_model(tmp_path / "corrupt"), "corrupt weights file"),
                              ("hf:", "", "hf: with nothing after it"),
                              ("tiny", "", "tiny decoder given words"),
                              ("seq2seq-luong", "", "seq2seq given words it cannot read"),
                              ("toy", "", "toy model")]:
        _set_model(at, model, spec)
        problems += _problems(at, name)
    monkeypatch.setenv(limits.ENV, "1")
    _set_model(at, "hf:", "../../etc/passwd")
    problems += _problems(at, "hosted: path traversal as a model name")
    _set_model(at, "bert")
    _set_text(at, "x" * 20_000)
    problems += _problems(at, "hosted: 20,000 characters")
    monkeypatch.delenv(limits.ENV)
    _set_model(at, "bert")
    _set_text(at, GOOD)
    problems += _problems(at, "a good sentence after all that")
    absent = _app()
    absent.session_state["device"] = "cuda"  # a device this cpu machine does not have, e.g. from a link
    absent.run()
    assert any("not available here" in str(c.value) for c in absent.sidebar.caption)
    absent.switch_page(view).run()
    problems += _problems(absent, "device that is not there")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("view", VIEWS)
def test_absurd_query_parameters(view):
    at = _app()
    for key, value in {"text": "x" * 50_000, "text_b": "\x00", "model": "hf:../../etc/passwd", "device": "quantum",
                       "dtype": "float3",
                       "heads_layer": "-1e309", "heads_head": "NaN", "graph_k": "1e999", "view": "<script>", "": "",
                       "page": "../../app.py"}.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(view).run()
    assert not _problems(at, "absurd query parameters")


def test_hosted_mode_caps_reach_the_sidebar_and_the_views(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")
    at = _app().run()
    assert at.sidebar.text_area(key="text").proto.max_chars == limits.HOSTED.text_chars
    _set_model(at, "hf:", "models")  # a folder of this repository, named like a hub id: never read as a folder
    assert at.sidebar.text_input(key="hf_spec").label == "Hub id"
    if "views/graph.py" in VIEWS:
        at.switch_page("views/graph.py").run()
        assert "not in this server's model cache" in at.error[0].value
        _set_model(at, "bert")
        _set_text(at, " ".join(["word"] * limits.HOSTED.flow_tokens))  # + [CLS] and [SEP]: over the cap
        assert not at.error, [e.value for e in at.error]
        at.radio(key="graph_view").set_value("All layers").run()
        assert not at.exception
        assert any(f"up to {limits.HOSTED.flow_tokens} tokens" in w.value for w in at.warning)
