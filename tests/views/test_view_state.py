"""Every view keeps its settings: changed, then left for another view and opened again, a setting is still
there; a fresh app given the link's query parameters shows the same setting and the same figure data; no
view numbers a layer or a head from 1."""
import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from ui.classroom import links
from ui.views import present

# view -> (widget kind, key, value set by hand, the same value as its query parameter); Pruning on the tiny
# decoder (scoring BERT takes half a minute)
CHANGES = {
    "heads": ("selectbox", "heads_head", 7, "H7"),
    "finder": ("selectbox", "find_behaviour", "[CLS]", "[CLS]"),
    "graph": ("radio", "graph_fusion", "max", "max"),
    "inside_head": ("radio", "ih_model", "tiny", "Tiny decoder"),
    "seq2seq": ("text_input", "s2s_date", "march 5, 1999", "march 5, 1999"),
    "positional": ("slider", "pos_d", 32, "32"),
    "bpe": ("radio", "bpe_alphabet", "bytes", "Bytes (GPT-2 byte-level)"),
    "kv_cache": ("selectbox", "kv_kvh", 2, "2 (GQA)"),
    "pruning": ("radio", "prune_colour", "confidence (loss-free)", "confidence (loss-free)"),
    "compare": ("selectbox", "cmp_layer", 2, "L2"),
    "corpus": ("selectbox", "corpus_head", 3, "H3"),
    "sparse": ("slider", "eff_w", 4, "4"),
    "tiled": ("slider", "eff_tblock", 8, "8"),
    "vision": ("number_input", "vis_digit", 5, "5"),
    "precision": ("radio", "quant_stat", "largest token", "largest token"),
    "sinks": ("radio", "sink_what", "the first k tokens", "the first k tokens"),
    "next_token": ("slider", "nt_temp", 0.5, "0.5"),
    "induction": ("selectbox", "ind_head", 3, "H3"),
    "attribution": ("number_input", "attr_steps", 32, "32"),
    "patching": ("text_input", "patch_corrupt", "def area(text): return text *", "def area(text): return text *"),
    "circuits": ("number_input", "circ_top", 10, "10"),
}
SIDEBAR = {"pruning": {"model": "tiny", "text": "31415"}, "next_token": {"model": "gpt", "text": "import os"},
           "patching": {"model": "gpt"}, "circuits": {"model": "induction"}}


def _app(params: dict, view: str) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=240)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    return at.switch_page(links.path(view)).run()


def _figures(at: AppTest) -> list:
    return [json.loads(c.proto.spec)["data"] for c in at.get("plotly_chart")]


def test_every_view_with_settings_is_covered():
    assert {v.stem for v in present() if v.prefix} == set(CHANGES)


@pytest.fixture(autouse=True)
def _corpus_cache(monkeypatch, tmp_path_factory):
    """The corpus view's statistics go to a folder of this test run, not the user's cache."""
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "corpus-cache"))


@pytest.mark.slow
@pytest.mark.parametrize("view", list(CHANGES))
def test_a_setting_survives_navigation_and_a_fresh_app_from_its_link(view):
    kind, key, value, param = CHANGES[view]
    at = _app(SIDEBAR.get(view, {}), view)
    getattr(at, kind)(key=key).set_value(value).run()
    assert not at.exception and getattr(at, kind)(key=key).value == value
    figures = _figures(at)
    at.switch_page("views/home.py").run()
    at.switch_page(links.path(view)).run()
    assert getattr(at, kind)(key=key).value == value, f"{view}: {key} was forgotten"
    fresh = _app({**SIDEBAR.get(view, {}), key: param}, view)
    assert not fresh.exception and not [w.value for w in fresh.warning if "link parameters" in w.value]
    assert getattr(fresh, kind)(key=key).value == value, f"{view}: the link did not restore {key}"
    assert _figures(fresh) == figures, f"{view}: the same link drew different figures"


LONG = ("Attention lets every word in a sentence look at every other word and decide how much of each to take. "
        "In a transformer, a layer holds several heads, and each head learns its own way of looking: one follows "
        "the word just before, another jumps to the end of the sentence, a third gathers the whole context evenly. "
        "Teachers like to show a class the pronoun that finds its noun, because it looks like understanding, yet "
        "the same head may simply prefer the subject. When the text grows long, the pictures grow dense, and a "
        "good tool must still answer quickly, label what it can and say plainly what it leaves out. This "
        "paragraph has about one hundred and twenty words, enough to test that promise on every view.")
# view -> the notice a 160-token paragraph must bring (None: none expected); the view's own text boxes get it too
NOTICES = {"inside_head": "the panels show tokens 0–31", "graph": "the graph draws tokens 0–39",
           "bpe": "the replay takes its first 120", "positional": "the demo uses its first 24"}
OWN_TEXT = {"positional": {"pos_demo_text": LONG, "pos_tab": "Why positions?"},
            "compare": {"cmp_a": LONG, "cmp_b": LONG.replace("quickly", "slowly")}}
LABEL = re.compile(r"(?<![\w-])([LH])(\d+)\b")  # "L3", "H11"; not "MiniLM-L6" (a name)


def _strings(node) -> list[str]:
    """Every string in a figure's JSON but its binary arrays (base64 under "bdata")."""
    if isinstance(node, dict):
        return [t for k, v in node.items() if k != "bdata" for t in _strings(v)]
    if isinstance(node, list):
        return [t for v in node for t in _strings(v)]
    return [node] if isinstance(node, str) else []


def _said(at: AppTest) -> str:
    return " ".join(str(m.value) for m in [*at.info, *at.warning, *at.caption])


@pytest.mark.slow
@pytest.mark.parametrize("view", [v.stem for v in present()])
def test_a_long_paragraph_runs_through_every_view_with_its_notices_and_zero_based_labels(view):
    at = _app({"text": LONG, **OWN_TEXT.get(view, {})}, view)
    assert not at.exception and not at.error, view
    if view in NOTICES:
        assert NOTICES[view] in _said(at), f"{view}: no notice that it shows part of the text"
    figures = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert all(len(str(f)) < 3_000_000 for f in figures), f"{view}: a figure over 3 MB"
    # MiniLM has layers L0..L5 and heads H0..H11: a 1-based label would show L6 or H12 somewhere
    shown = " ".join(_strings(figures)) + " ".join(str(getattr(e, "value", "")) for e in at.main if hasattr(e, "value"))
    shown += " ".join(o for s in at.selectbox for o in s.options)
    found = {(kind, int(n)) for kind, n in LABEL.findall(shown)}
    assert all(n <= (5 if kind == "L" else 11) for kind, n in found), f"{view}: {sorted(found)}"
    if view in ("heads", "finder", "graph", "inside_head", "compare", "pruning"):
        assert {("L", 0), ("L", 5), ("H", 0), ("H", 11)} <= found, f"{view}: layers and heads not named"
