"""analysis.kv: the KV formula against published per-token figures and a hand count, variants, flatness."""
import numpy as np
import pytest
import torch

from analysis.kv import (
    KNOWN,
    KVConfig,
    attention_kind,
    cache_norms,
    human_bytes,
    known_table,
    kv_bytes_per_token,
    kv_variants,
    late_over_early,
)


def test_formula_matches_a_cache_of_real_tensors():
    k = torch.zeros(1, 4, 10, 16, dtype=torch.float16)  # (B, kvh, T, hd) of one layer
    per_layer = 2 * k.numel() * k.element_size()
    assert kv_bytes_per_token(3, 4, 16, 2) * 10 == 3 * per_layer


def test_known_models_match_their_published_kv_sizes():
    """fp16 KV per token, counted by hand from the published shapes: Llama-2-7B 2*32*32*128*2 = 512 KiB
    (the often quoted 0.5 MB per token), Llama-3-8B a quarter of it (8 of 32 heads), Falcon-7B 8 KiB
    (1 kv head of 64), GPT-2 small 2*12*12*64*2 = 36 KiB."""
    rows = {r["model"]: r for r in known_table(4096, 2)}
    assert [c.name for c in KNOWN] == ["GPT-2 small", "Llama-2-7B", "Llama-3-8B", "Falcon-7B"]
    assert rows["Llama-2-7B"]["bytes_per_token"] == 524_288
    assert rows["Llama-3-8B"]["bytes_per_token"] == 131_072
    assert rows["Falcon-7B"]["bytes_per_token"] == 8_192
    assert rows["GPT-2 small"]["bytes_per_token"] == 36_864
    assert rows["Llama-2-7B"]["at 4,096 tokens"] == "2 GiB" and rows["Llama-2-7B"]["total_bytes"] == 2 * 1024**3
    assert [rows[n]["kind"] for n in ("GPT-2 small", "Llama-2-7B", "Llama-3-8B", "Falcon-7B")] == [
        "MHA", "MHA", "GQA", "MQA"]


def test_extra_rows_follow_the_known_ones():
    rows = known_table(100, 4, (KVConfig("mine", 2, 8, 2, 32),))
    assert rows[-1]["model"] == "mine" and rows[-1]["bytes_per_token"] == 2 * 2 * 2 * 32 * 4


@pytest.mark.parametrize("heads, expected", [
    (8, {"MHA": 8, "GQA": 2, "MQA": 1}), (32, {"MHA": 32, "GQA": 8, "MQA": 1}),
    (12, {"MHA": 12, "GQA": 3, "MQA": 1}), (2, {"MHA": 2, "MQA": 1}), (7, {"MHA": 7, "MQA": 1}), (1, {"MHA": 1}),
])
def test_variants_divide_the_head_count(heads, expected):
    assert kv_variants(heads) == expected
    assert all(heads % k == 0 for k in expected.values())
    assert {attention_kind(heads, k) for k in expected.values()} == set(expected)


def test_human_bytes():
    assert [human_bytes(n) for n in (512, 1536, 524_288, 1000 * 1024, 3 * 2**30)] == [
        "512 B", "1.5 KiB", "512 KiB", "1000 KiB", "3 GiB"]


def test_late_over_early_uses_the_last_100_and_steps_10_to_110():
    flat = [1.0] * 512
    assert late_over_early(flat) == 1.0
    growing = list(np.linspace(1, 3, 512))
    expected = np.median(growing[-100:]) / np.median(growing[10:110])
    assert late_over_early(growing) == pytest.approx(expected)
    with pytest.raises(ValueError, match="at least 12 steps"):
        late_over_early([1.0] * 11)


def test_cache_norms_one_row_per_layer_k_and_v():
    k = torch.ones(1, 2, 5, 4)  # (B, kvh, T, hd): every vector has norm 2
    norms = cache_norms([k, 3 * k], [2 * k, 4 * k])
    assert norms.shape == (4, 5)
    np.testing.assert_allclose(norms[:, 0], [2, 4, 6, 8])
