"""experiments.precision on the tiny decoder: attention compared on shared tokens, agreement, metric, latency."""
import numpy as np
import pytest

from analysis.trace import AttentionTrace
from experiments import precision
from models import variants

pytestmark = pytest.mark.usefixtures("one_thread")


def _trace(tokens, weights, output):
    return AttentionTrace(tokens=tokens, key_tokens=list(tokens), weights=weights, kind="causal", output=output,
                          notices=())


def test_decoders_that_write_different_answers_are_compared_on_the_shared_prefix():
    w = np.tril(np.ones((1, 1, 4, 4), np.float32))
    w /= w.sum(-1, keepdims=True)
    v = w.copy()
    v[0, 0, 3] = [0, 0, 0, 1]                                # the row after the tokens part is not compared
    res = precision.compare_traces(_trace(list("12=1"), w, "1"), _trace(list("12=2"), v, "2"))
    assert res["tokens"] == list("12=") and res["max_js"].max() == 0 and not res["same_output"]


def test_tiny_fp32_agrees_fully_and_int8_is_measured():
    from data.sorting import held_out
    from experiments.sorting import encode, exact_match
    from models.tiny import load

    tiny = load()
    probe = precision.probe_for(tiny, "", 40)
    made = {k: variants.make(tiny, k, "tiny") for k in ("fp32", "int8_dynamic")}
    rows = precision.measure(tiny, made, probe, runs=2)
    assert rows["fp32"]["top1_agreement"] == 1.0 and rows["fp32"]["cosine"] == pytest.approx(1.0, abs=1e-12)
    assert rows["fp32"]["metric"] == exact_match(tiny.net, encode(held_out(40)))
    assert rows["int8_dynamic"]["top1_agreement"] >= 0.99 and all(r["seconds"] > 0 for r in rows.values())
    compared = precision.attention(tiny, made, "9081726354")
    assert compared["fp32"]["max_js"].max() == 0 and compared["fp32"]["same_output"]
    assert 0 < compared["int8_dynamic"]["mean_js"].mean() < 0.01


def test_an_encoder_with_its_mlm_head_is_judged_on_the_users_text(tmp_path):
    from models.hf import load_encoder
    from tests.models.test_hf_mlm_pruned import save_tiny_mlm

    save_tiny_mlm(tmp_path)
    enc = load_encoder(str(tmp_path))
    probe = precision.probe_for(enc, "The cat sat on the mat.", 10, batch=1)
    assert probe.metric_name == "Masked-token accuracy" and "each masked in turn" in probe.about
    made = {k: variants.make(enc, k) for k in ("fp32", "int8_dynamic")}
    assert made["int8_dynamic"].mlm.base_model is made["int8_dynamic"].model  # one copy, still shared
    rows = precision.measure(enc, made, probe, runs=1)
    assert rows["fp32"]["top1_agreement"] == 1.0 and rows["int8_dynamic"]["cosine"] > 0.9
