"""AppTest of the precision view: the tiny decoder measured end to end, MiniLM's fallback for a variant it lacks,
the hosted cap on timed runs, the built-in gpt's perplexity and the ViT compared on a held-out digit."""
import json

import pytest
from streamlit.testing.v1 import AppTest

import limits
from models.variants import WEIGHTS
from tests.views.view_at import open_view


def figures(name: str) -> dict:
    return json.loads((WEIGHTS / name / "training.json").read_text())


def _page(model: str, text: str, **state) -> AppTest:
    return open_view("precision", model=model, text=text, **state)


@pytest.mark.slow
def test_tiny_measured_end_to_end():
    at = _page("tiny", "31415", quant_variants=["fp16", "int8_dynamic", "int8_qat"])
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 3  # divergence grid, the biggest change, per tensor vs per channel
    assert at.radio(key="quant_head").options[0].startswith("L")
    at.slider(key="quant_items").set_value(30)
    at.slider(key="quant_runs").set_value(1)
    at.toggle(key="quant_measure").set_value(True).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    fp32 = table[table["variant"] == "fp32"].iloc[0]
    assert fp32["top-1 agreement"] == 1.0 and fp32["× fp32"] == 1.0
    int8 = table[table["variant"] == "int8 dynamic (per channel)"].iloc[0]
    assert int8["× fp32"] < 0.35 and int8["Exact match"] == 1.0 and int8["ms per forward"] > 0


def test_minilm_without_qat_weights_says_so_and_shows_fp32():
    at = _page("bert", "The bank of the river.", quant_variants=["int8_qat"])
    assert any("int8 QAT weights ship for gpt, tiny only" in w.value and "Showing fp32 instead." in w.value
               for w in at.warning)
    assert "0.000" in next(c.value for c in at.caption if "Largest single weight change" in c.value)


@pytest.mark.parametrize("hosted", [False, True])
def test_timed_runs_follow_the_hosting_cap(hosted, monkeypatch):
    if hosted:
        monkeypatch.setenv(limits.ENV, "1")
    else:
        monkeypatch.delenv(limits.ENV, raising=False)
    at = _page("tiny", "7", quant_variants=["int8_dynamic"])
    assert at.slider(key="quant_runs").max == limits.current().precision_runs
    assert at.slider(key="quant_items").max == limits.current().precision_items


def test_gpt_measures_perplexity_on_held_out_windows():
    at = _page("gpt", "The assert statement checks a condition.", quant_variants=["int8_dynamic"])
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 3 and not at.button  # compared on the text, no switch offered
    assert "quant_items" not in [s.key for s in at.slider]  # a fixed number of held-out windows
    at.slider(key="quant_runs").set_value(1)
    at.select_slider(key="quant_batch").set_value(1)
    at.toggle(key="quant_measure").set_value(True).run()
    assert not at.exception and not at.error, at.exception
    table = at.dataframe[0].value.set_index("variant")
    assert table.loc["fp32", "Perplexity"] == figures("gpt")["subset"]["perplexity"]  # training.json's 8 windows
    assert table.loc["int8 dynamic (per channel)", "Perplexity"] == pytest.approx(table.loc["fp32", "Perplexity"],
                                                                                  rel=0.02)
    assert table.loc["int8 dynamic (per channel)", "top-1 agreement"] >= 0.95


def test_vit_compares_attention_on_a_held_out_digit_and_measures_digits_accuracy():
    at = _page("vit", "", quant_variants=["int8_dynamic", "int4_weight_only", "int8_qat"], quant_digit=7)
    assert not at.error and not at.button, [e.value for e in at.error]
    assert any("Held-out digit 7: scikit-learn's digit" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 3 and at.radio(key="quant_head").options[0].startswith("L")
    assert any("int4 weight-only kernel cannot take" in w.value for w in at.warning)  # the 10-class head stays
    assert any("not for vit. Showing fp32 instead." in w.value for w in at.warning)      # no QAT weights for vit
    at.slider(key="quant_items").set_value(50)
    at.slider(key="quant_runs").set_value(1)
    at.toggle(key="quant_measure").set_value(True).run()
    assert not at.exception and not at.error, at.exception
    table = at.dataframe[0].value.set_index("variant")
    assert table.loc["fp32", "top-1 agreement"] == 1.0 and table.loc["int8 dynamic (per channel)", "× fp32"] < 0.3
    assert table.loc["int8 dynamic (per channel)", "Digits accuracy"] >= table.loc["fp32", "Digits accuracy"] - 0.04


def test_a_model_with_64_positions_is_measured_within_its_context(tmp_path, monkeypatch):
    """The timing batch and the task are bounded by the model's context: a BERT with 64 positions used to fail
    with 'size of tensor a (128) must match ... (64)' when its agreement was measured."""
    from bench import tiny_families

    monkeypatch.setitem(tiny_families.SIZE, "positions", 64)
    folder = tiny_families.write("bert", tmp_path / "bert64")
    at = _page("hf:", "a short text", hf_spec=str(folder), quant_variants=["int8_dynamic"])
    at.slider(key="quant_items").set_value(10)
    at.slider(key="quant_runs").set_value(1)
    at.toggle(key="quant_measure").set_value(True).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert list(table["variant"])[:2] == ["fp32", "int8 dynamic (per channel)"]
    assert "× 64 tokens" in at.toggle(key="quant_measure").label


def test_the_probe_and_the_channel_figure_are_made_once_per_server(monkeypatch):
    """MiniLM's probe (held-out pairs and a timing batch, tokenized) and its per-channel figure (weights only) do
    not depend on the visitor's text: a fresh link with another sentence uses the kept ones, each equal to a
    fresh build."""
    import models
    from analysis.precision import channel_errors
    from experiments import precision as exp
    from models.variants import first_linear
    from tests.views.kept_figures import charts, count_builds, counts, same_figure
    from ui import precision as ui
    from ui.runtime import cache

    fresh_probe, fresh_channels = exp.paraphrase_probe, ui.channel_fig
    cache.STORES["results"].clear()
    built = count_builds(monkeypatch, exp, "paraphrase_probe")
    count_builds(monkeypatch, ui, "channel_fig", "channel_errors", calls=built)
    first = _page("bert", "The bank of the river.", quant_variants=["int8_dynamic"])
    assert counts(built) == dict.fromkeys(built, 1)
    second = _page("bert", "A heron waited in the reeds.", quant_variants=["int8_dynamic"])
    second.slider(key="quant_runs").set_value(2).run()  # a rerun
    assert not second.exception and counts(built) == dict.fromkeys(built, 1)
    caption = next(t.label for t in second.toggle if t.key == "quant_measure")
    (probe_args, _), = built["paraphrase_probe"]
    probe = fresh_probe(*probe_args)
    assert probe.about in caption and probe.timing in caption and probe.metric_name.lower() in caption
    assert charts(second)[-1] == charts(first)[-1]
    name, weight = first_linear(models.load("bert"))
    assert same_figure(charts(second)[-1], fresh_channels(channel_errors(weight.numpy()), name))
    assert not exp.reads_text(models.load("bert"))  # MiniLM has no MLM head: its probe reads held-out pairs
