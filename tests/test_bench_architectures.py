"""The families sweep (bench.architectures) at its quick size, one tiny Llama: every count it reports is 1, so a
change in how the app reads a model that the sweep does not follow shows here, not as a silent drop of README's
figures (a decoder's prompt losing its appended end token once made every decoder count as not exact)."""
import pytest

from bench import architectures


@pytest.mark.slow  # ~11 s on 2 cores: the quick group's smoke bench runs this sweep too, without these checks
def test_the_quick_sweep_counts_one_llama_exact_with_dla_patching_and_an_export():
    out = architectures.measure(True)
    assert out["not_exact"] == {} and out["why_not"] == {"dla": {}, "patching": {}, "export": {}}, out
    assert {k: out[k] for k in ("tried", "exact", "causal", "dla_ok", "patching_ok", "export_ok")} == dict.fromkeys(
        ("tried", "exact", "causal", "dla_ok", "patching_ok", "export_ok"), 1)


@pytest.mark.slow  # two exports reloaded in a fresh Python (patching a BERT-style causal LM is in the suite)
def test_a_bert_style_causal_lm_and_bert_generation_are_patched_and_exported_by_their_kept_heads(tmp_path):
    """BertLMHeadModel (kept as the encoder's causal LM) and BertGenerationDecoder (a causal-LM class whose name ends
    otherwise, once loaded without its head): the sweep's patching check and an export reloaded outside the project
    equal to the gated model, as every decoder's."""
    import models
    from bench.tiny_any import save

    exports = {}
    for t in ("bert", "bert-generation"):
        m = models.load("hf:" + save(t, "causal", tmp_path / t, is_decoder=True))
        assert m.predicts == ("next token" if t == "bert-generation" else None)  # an encoder's causal LM: not in
        # the contract's values (Next token reads it through Encoder.writes)
        assert architectures._patching(m)
        exports[t] = architectures._export(m, tmp_path / t / "pruned")
    assert architectures._reloaded(exports) == {"bert": True, "bert-generation": True}


def test_an_encoders_causal_lm_is_built_as_its_checkpoints_are():
    """BertLMHeadModel and its kin were built without is_decoder, so the sweep counted 14 BERT-style causal LMs as
    refused by patching for a config no checkpoint of theirs has; XLM's causal LM sets its own flag."""
    from bench.architectures import as_saved

    assert as_saved("bert", "causal") == {"is_decoder": True} and as_saved("xlm", "causal") == {"causal": True}
    assert as_saved("llama", "causal") == {} and as_saved("bert", "masked") == {}
