"""Hosted mode keeps no lower-precision copy of a model past the request that made it (decided by the model store's
keys and bytes, never by a clock): the sizes table and the comparison make their copies, use them and let them go,
and the numbers shown equal those of a fresh copy made outside the app's caches. A laptop does the same for a small
model (MiniLM), making each copy once for the comparison and the table together, and keeps the copies of a model over
SMALL_MODEL_BYTES."""
import pytest

import experiments.precision as ep
import limits
from models import load, variants
from tests.views.view_at import open_view
from ui.runtime import cache

TEXT = "The ferry crossed the wide grey estuary at dawn"
CHOSEN = ["fp16", "int8_dynamic"]


def _copies() -> list:
    """Keys of the precision copies the model store holds."""
    return [k for k in cache.STORES["models"]._values if k[0] in ("precision-variant", "precision-task-variant")]


def _open(monkeypatch, hosted: bool):
    if hosted:
        monkeypatch.setenv(limits.ENV, "1")
    else:
        monkeypatch.delenv(limits.ENV, raising=False)
    for store in cache.STORES.values():
        store.clear()
    made = []
    real = variants.make
    monkeypatch.setattr(variants, "make", lambda *a, **k: made.append(a[1]) or real(*a, **k))
    return open_view("precision", model="bert", text=TEXT, quant_variants=CHOSEN), made


@pytest.mark.slow  # MiniLM, two copies for the sizes and two for the comparison
def test_hosted_comparison_keeps_no_copy_and_shows_a_fresh_copys_numbers(monkeypatch):
    at, made = _open(monkeypatch, hosted=True)
    assert not at.error and sorted(made) == sorted(CHOSEN)  # the sizes table: one copy of each, made once
    assert _copies() == []
    fp32_bytes = cache.STORES["models"].nbytes  # the cached fp32 model alone
    assert fp32_bytes == cache.sizeof(load("bert"))
    at.button(key="quant_go").click().run()
    assert not at.exception and not at.error and sorted(made) == sorted(CHOSEN * 2)  # the comparison: one more each
    assert _copies() == [] and cache.STORES["models"].nbytes == fp32_bytes
    at.radio(key="quant_stat").set_value("largest token").run()  # a rerun: kept results, sizes and notices
    assert not at.exception and len(made) == 4 and _copies() == []

    m = load("bert")  # outside the app's caches
    table = {row["variant"]: row for _, row in at.dataframe[0].value.iterrows()}
    for key in CHOSEN:
        fresh = variants.make(m, key, "bert")
        row = table[variants.VARIANTS[key].title]
        assert row["linear weights (MB)"] == round(variants.linear_bytes(fresh) / 1e6, 2)
        assert row["whole model (MB)"] == round(variants.model_bytes(fresh) / 1e6, 2)
        assert row["file on disk (MB)"] == round(variants.disk_bytes(fresh) / 1e6, 2)
    caption = next(c.value for c in at.caption if "Largest single weight change" in c.value)
    for key in CHOSEN:
        want = ep.compare_variant(m.attend(TEXT), variants.make(m, key, "bert"), TEXT)["max_change"]
        assert f"{variants.VARIANTS[key].title} {want:.3f}" in caption


@pytest.mark.slow
def test_a_laptop_makes_each_copy_of_a_small_model_once_and_keeps_none(monkeypatch):
    at, made = _open(monkeypatch, hosted=False)
    assert not at.error and sorted(made) == sorted(CHOSEN)  # one copy each for the table and the comparison
    assert _copies() == [] and cache.STORES["models"].nbytes == cache.sizeof(load("bert"))
    at.radio(key="quant_stat").set_value("largest token").run()  # a rerun: kept results, sizes and notices
    assert not at.exception and len(made) == len(CHOSEN) and _copies() == []


@pytest.mark.slow
def test_a_laptop_keeps_the_copies_of_a_model_over_the_small_size(monkeypatch):
    from ui import precision as up

    monkeypatch.setattr(up, "SMALL_MODEL_BYTES", 1 << 20)
    at, made = _open(monkeypatch, hosted=False)
    assert not at.error and sorted(made) == sorted(CHOSEN)
    assert sorted(k[-1] for k in _copies()) == sorted(CHOSEN)


def test_a_hosted_variant_the_device_refuses_still_says_why_from_the_kept_sizes(monkeypatch):
    """int8 QAT has no weights for MiniLM: the fallback's notice is kept with the sizes and shown, no copy kept."""
    monkeypatch.setenv(limits.ENV, "1")
    for store in cache.STORES.values():
        store.clear()
    at = open_view("precision", model="bert", text=TEXT, quant_variants=["int8_qat"])
    at.button(key="quant_go").click().run()
    assert not at.exception
    assert any("int8 QAT weights ship for gpt, tiny only" in w.value and "Showing fp32 instead." in w.value
               for w in at.warning)
    assert _copies() == []
