"""The families sweep (bench.architectures) at its quick size, one tiny Llama: every count it reports is 1, so a
change in how the app reads a model that the sweep does not follow shows here, not as a silent drop of README's
figures (a decoder's prompt losing its appended end token once made every decoder count as not exact)."""
from bench import architectures


def test_the_quick_sweep_counts_one_llama_exact_with_dla_patching_and_an_export():
    out = architectures.measure(True)
    assert out["not_exact"] == {} and out["why_not"] == {"dla": {}, "patching": {}, "export": {}}, out
    assert {k: out[k] for k in ("tried", "exact", "causal", "dla_ok", "patching_ok", "export_ok")} == dict.fromkeys(
        ("tried", "exact", "causal", "dla_ok", "patching_ok", "export_ok"), 1)
