"""AppTest of views/sparse.py and views/tiled.py through the app frame: the numbers they show against
analysis.sparsity, experiments.sparse_models and torch's own attention; links; bad choices; the cost sweep."""
import base64
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from streamlit.testing.v1 import AppTest

import limits
from analysis import sparsity
from analysis.efficient import online_softmax_steps
from experiments import sparse_models
from models import load
from models.internals import head_qkv

TEXT = "The river bank was dirty after the flood."


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def run(page: str, query: dict | None = None, **state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["text"] = TEXT
    for key, value in state.items():
        at.session_state[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page(f"views/{page}.py")
    return at.run()


def figure(at: AppTest, title_start: str) -> dict:
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec["layout"].get("title", {})
        if (title.get("text", "") if isinstance(title, dict) else title).startswith(title_start):
            return spec
    raise AssertionError(f"no figure titled {title_start!r}")


def array(value) -> np.ndarray:
    """A figure's array, decoded from plotly's typed-array form when it uses one."""
    if isinstance(value, dict):
        shape = [int(n) for n in str(value["shape"]).split(",")] if "shape" in value else [-1]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).reshape(shape).astype(float)
    return np.array(value, dtype=float)


def clean(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert not at.warning, [w.value for w in at.warning]


def test_sparse_page_counts_reach_and_effect_on_minilm():
    at = run("sparse", query={"eff_w": "1", "eff_pattern": "Global + local (Longformer)"})  # a link: labels
    clean(at)
    assert at.slider(key="eff_w").value == 1 and at.selectbox(key="eff_pattern").value == "longformer"
    n = len(load("bert").attend(TEXT).tokens)
    bars = figure(at, f"Query-key pairs scored over {n} tokens")["data"][0]
    cfg = dict(w=1, dilation=2, block=4, band=0, every=3, globals_=(0,), n_random=2)
    assert array(bars["y"]).tolist() == [int(sparsity.build(p, n, **cfg).sum()) for p in sparsity.PATTERNS]
    assert array(bars["y"])[:3].tolist() == [n * n, n * (n + 1) // 2, sparsity.pairs("sliding_window", n, w=1)]
    # a global token joins every pair in two layers: the caption says so
    assert any("every token reaches every token after 2 layer(s)" in c.value for c in at.caption)
    eff = sparse_models.encoder_effect(load("bert"), TEXT, None, sparsity.longformer(n, 1, (0,)))
    shown = {m.label: m.value for m in at.metric}
    assert shown["output cosine vs dense"] == f"{eff.output_cosine:.4f}"
    assert shown["pairs kept"] == f"{eff.mask.sum():,} of {n * n:,}"
    assert shown["sentence embedding cosine"] == f"{eff.sentence_cosine:.4f}"
    at.selectbox(key="eff_layer").set_value(5)
    at.selectbox(key="eff_head").set_value(11).run()
    clean(at)
    pair = figure(at, "L5 H11")
    np.testing.assert_allclose(array(pair["data"][1]["z"]), eff.sparse[5, 11], atol=1e-4)


def test_sparse_page_bad_choices_get_one_sentence_each_and_the_rest_still_draws():
    at = run("sparse", eff_block=64, eff_globals="3, 99")
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors == ["A block of 64 tokens does not fit in the 11 tokens: choose 1 to 11.",
                      "Global token 99 is outside the 11 tokens: choose positions 0 to 10."]
    assert len(array(figure(at, "Query-key pairs scored")["data"][0]["y"])) == len(sparsity.PATTERNS) - 2
    at.text_input(key="eff_globals").set_value("first").run()
    assert [e.value for e in at.error][0].startswith("Global tokens are positions separated by commas")


def test_sparse_page_on_the_tiny_decoder_shows_both_answers():
    at = run("sparse", model="tiny", text="9081726354", eff_w=2)
    clean(at)
    shown = {m.label: m.value for m in at.metric}
    window = sparse_models.decoder_effect(load("tiny"), "9081726354",
                                          lambda n: sparsity.sliding_window(n, 2))
    answer = f"Sorting answer, dense: `0123456789` · with the pattern: `{window.answer[1]}`"
    assert answer in [m.value for m in at.markdown]
    assert shown["top-1 agreement"] == f"{window.top1:.0%}" and "sentence embedding cosine" not in shown
    assert any("decoder" in c.value for c in at.caption)


def test_sparse_page_without_a_maskable_model_still_draws_patterns():
    at = run("sparse", model="toy")
    assert not at.exception and not at.error
    assert "pick one in the sidebar" in at.info[0].value
    figure(at, "Query-key pairs scored")


def test_tiled_page_steps_match_the_online_softmax_of_the_real_head():
    at = run("tiled", query={"eff_tblock": "3", "eff_qblock": "1"}, eff_step=2)
    clean(at)
    bert = load("bert")
    d = head_qkv(bert.model, bert.tokenizer, TEXT, 0, 0)
    q, k, v = (torch.from_numpy(x) for x in (d.q, d.k, d.v))
    steps = online_softmax_steps(q, k, v, query_block=1, block=3)
    table = at.dataframe[0].value
    assert len(table) == 3  # the rows of query block 1
    np.testing.assert_allclose(table["m after"], steps[2].m.numpy(), atol=1e-3)
    np.testing.assert_allclose(table["l after"], steps[2].l.numpy(), atol=1e-3)
    exact = F.scaled_dot_product_attention(q[None], k[None], v[None])[0, 3:6]
    np.testing.assert_allclose(table["|O/l − exact|"], (steps[2].out - exact).abs().amax(-1), atol=1e-6)
    assert at.metric[0].value == f"{float((steps[2].out - exact).abs().max()):.1e}"
    diff = float(at.success[0].value.split("= ")[1].split(" over")[0])
    assert diff < 1e-5


def test_tiled_page_bad_query_block_and_stale_layer_from_a_link():
    at = run("tiled", model="tiny", text="31415", query={"eff_tlayer": "5", "eff_qblock": "40"})
    assert not at.exception
    assert at.error[0].value == "Query block 40 does not exist: 11 tokens in blocks of 4 make blocks 0 to 2."
    assert at.toggle(key="eff_tcausal").value  # a decoder: causal by default


@pytest.mark.slow
def test_cost_sweep_is_measured_once_and_shown_on_both_pages(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")  # hosted: the largest n follows the hosted cap
    at = run("sparse")
    sizes = at.select_slider(key="eff_scost_max_n").options
    assert sizes[-1] == str(limits.HOSTED.attention_cost_n)
    captions = [c.value for c in at.caption]
    assert "Work: 74 GFLOP of 100 allowed per request here." in captions  # the hosted maximum, counted before it runs
    assert any(c.startswith("Bounded on this hosted server: n up to 4,096") and "best of 2" in c for c in captions)
    assert any(c.startswith("Not measured yet") and c.endswith("… 4,096.") for c in captions)  # not "up to 16,384"
    at.select_slider(key="eff_scost_max_n").set_value(512).run()
    at.button(key="eff_scost_measure").click().run()
    clean(at)
    time_fig = figure(at, "Time per call")
    assert [t["name"].split(" (slope")[0] for t in time_fig["data"]] == [
        "dense (eager)", "sliding window w=128", "block-sparse 64, band 1"]
    assert all(t["x"] == [256, 512] for t in time_fig["data"])
    at.switch_page("views/tiled.py").run()
    at.select_slider(key="eff_tcost_max_n").set_value(512).run()  # the same sweep: no second measurement
    clean(at)
    names = [t["name"] for t in figure(at, "Peak memory beyond the inputs")["data"]]
    assert [x.split(" (slope")[0] for x in names] == ["dense (eager)", "tiled (ours, online softmax)",
                                                      "torch SDPA (fused)"]


def test_sparse_page_lays_a_pattern_on_an_xlm_r_folder(tmp_path):
    """XLM-R is RoBERTa's code under another name: the page masks it as it masks BERT (it once offered no model)."""
    from bench.tiny_any import save

    folder = save("xlm-roberta", "masked", tmp_path)
    at = run("sparse", query={"eff_w": "1", "eff_pattern": "Sliding window"}, model="hf:", hf_spec=folder)
    clean(at)
    m = load("hf:" + folder)
    n = len(m.attend(TEXT).tokens)
    eff = sparse_models.encoder_effect(m, TEXT, None, sparsity.sliding_window(n, 1))
    shown = {x.label: x.value for x in at.metric}
    assert shown["output cosine vs dense"] == f"{eff.output_cosine:.4f}" and eff.output_cosine < 1.0
    assert shown["pairs kept"] == f"{eff.mask.sum():,} of {n * n:,}"
    assert np.all(eff.sparse[:, :, ~eff.mask] == 0)  # the model's own weights, off the pattern: none
