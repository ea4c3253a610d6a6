"""models.decoder: cached and uncached generation agree, the cache's measured bytes equal the formula,
GQA/MQA shapes, and impossible or oversized configurations are refused with a sentence. No timing."""
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from analysis.kv import kv_bytes_per_token
from experiments.kv_cache import compare, generate, measure_variants
from models.decoder import DecoderConfig, build, check_fits, estimate_bytes, flops, prompt
from models.generate import stream
from models.tiny import END, encode, read_weights

SMALL = DecoderConfig(layers=2, d_model=64, heads=8, kv_heads=8, vocab_size=64, max_len=128)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("kv_heads", [8, 2, 1])
def test_cached_and_uncached_give_the_same_tokens_and_logits(kv_heads):
    cfg = replace(SMALL, kv_heads=kv_heads)
    net, idx = build(cfg, total_len=60), prompt(cfg)
    cached, uncached = generate(net, idx, 44, use_cache=True), generate(net, idx, 44, use_cache=False)
    assert cached.tokens == uncached.tokens and len(set(cached.tokens)) > 3  # not one token repeated
    torch.testing.assert_close(torch.stack(cached.logits), torch.stack(uncached.logits), atol=1e-4, rtol=0)
    r = compare(cached, uncached)
    assert r["same_tokens"] and r["max_abs_logit_diff"] < 1e-4


@pytest.mark.parametrize("kv_heads, dtype", [(4, "float32"), (1, "bfloat16")])
def test_measured_cache_bytes_equal_the_formula_at_every_step(kv_heads, dtype):
    cfg = replace(SMALL, kv_heads=kv_heads, dtype=dtype)
    rec = generate(build(cfg, total_len=40), prompt(cfg), 24, use_cache=True)
    per_token = 2 * cfg.layers * kv_heads * (cfg.d_model // cfg.heads) * (2 if dtype == "bfloat16" else 4)
    assert rec.positions == list(range(16, 40))  # the prompt at once, then one token a step
    assert rec.cache_bytes == [per_token * t for t in rec.positions]
    assert per_token == kv_bytes_per_token(cfg.layers, kv_heads, cfg.head_dim, torch.tensor([], dtype=getattr(
        torch, dtype)).element_size())


def test_gqa_and_mqa_cache_and_weight_shapes():
    for kv_heads in (8, 4, 1):
        cfg = replace(SMALL, kv_heads=kv_heads)
        net = build(cfg, total_len=20)
        assert net.blocks[0].attn.c_attn.weight.shape == ((8 + 2 * kv_heads) * 8, 64)  # [q | k | v] heads
        steps = list(stream(net, prompt(cfg), 3, use_cache=True))
        cache = steps[-1].cache
        assert cache.keys[1].shape == cache.values[1].shape == (1, kv_heads, 18, 8)  # (B, kvh, T, hd)
        _, atts = net(prompt(cfg))
        assert atts[0].shape == (1, 8, 16, 16)  # every query head has its own weights


def test_grouped_attention_equals_torch_sdpa_with_repeated_kv():
    """One layer's output, checked against torch's own attention with each kv head repeated per group."""
    cfg = replace(SMALL, kv_heads=2)
    attn = build(cfg, total_len=16).blocks[0].attn
    x = torch.randn(1, 10, 64, generator=torch.Generator().manual_seed(3))  # (B, T, C)
    with torch.no_grad():
        out, att = attn(x, None, 0)
        q, k, v = attn.c_attn(x).split([64, 16, 16], dim=-1)  # [8 query heads | 2 key heads | 2 value heads]
        q = q.view(1, 10, 8, 8).transpose(1, 2)  # (B, nh, T, hd)
        k, v = (t.view(1, 10, 2, 8).transpose(1, 2).repeat_interleave(4, dim=1) for t in (k, v))  # (B, nh, T, hd)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(1, 10, 64)
        ref = attn.c_proj(ref)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(att.sum(-1), torch.ones(1, 8, 10))
    assert att[0, :, 0, 1:].abs().max() == 0  # causal


def test_same_seed_same_weights_and_tokens():
    a, b = build(SMALL, total_len=30), build(SMALL, total_len=30)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert generate(a, prompt(SMALL), 10, True).tokens == generate(b, prompt(SMALL), 10, True).tokens


@pytest.mark.parametrize("change, words", [
    ({"kv_heads": 3}, "kv_heads must divide heads: 8 query heads cannot share 3 kv heads evenly; "
                      "choose one of 1, 2, 4 or 8."),
    ({"d_model": 60}, "d_model 60 does not split into 8 heads"),
    ({"layers": 0}, "layers must be at least 1"),
    ({"dtype": "float8"}, "choose one of float32, float16, bfloat16"),
])
def test_impossible_configurations_are_explained(change, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        build(replace(SMALL, **change))


def test_over_the_cap_is_refused_before_anything_is_allocated(monkeypatch):
    big = DecoderConfig(layers=32, d_model=4096, heads=32, kv_heads=32)
    monkeypatch.setattr(torch.nn.Module, "__init__", lambda *a, **k: pytest.fail("allocated"))
    with pytest.raises(ValueError, match=r"would need about .* GiB .* over the 2 GiB cap: use fewer layers"):
        build(big, total_len=512)
    with pytest.raises(ValueError, match="over the 1 KiB cap"):
        check_fits(SMALL, 20, cap=1024)
    with pytest.raises(ValueError, match="exceed this decoder's 128: generate fewer tokens"):
        check_fits(SMALL, 129)


def test_estimate_counts_the_real_parameters_and_cache():
    cfg = replace(SMALL, kv_heads=2)
    net = build(cfg, total_len=30)
    est = estimate_bytes(cfg, 30)
    assert est["weights"] == 4 * sum(p.numel() for p in net.parameters())
    rec = generate(net, prompt(cfg), 15, use_cache=True)
    assert est["cache"] == rec.cache_bytes[-1] * 30 // rec.positions[-1]


def test_flops_without_the_cache_grow_quadratically():
    cached, uncached = flops(SMALL, 16, 100, True), flops(SMALL, 16, 100, False)
    assert uncached > 20 * cached
    assert flops(SMALL, 16, 200, False) > 3 * flops(SMALL, 16, 100, False)


def test_stream_with_the_cache_equals_a_plain_greedy_loop_on_the_trained_tiny_decoder():
    net, _ = read_weights()
    seq = torch.tensor([encode("9081726354")])
    steps = list(stream(net, seq, 11, use_cache=True, stop=END))
    with torch.no_grad():  # the independent path: the whole sequence through forward at every step, no cache
        plain = []
        for _ in range(11):
            logits, _ = net(seq)
            plain.append(logits[:, -1])
            seq = torch.cat([seq, logits[:, -1:].argmax(-1)], dim=1)
            if seq[0, -1] == END:
                break
    assert [s.token for s in steps] == seq[0, 11:].tolist() and steps[-1].token == END
    torch.testing.assert_close(torch.stack([s.logits for s in steps], dim=1), torch.stack(plain, dim=1),
                               atol=1e-4, rtol=0)
    assert steps[-1].cache.seq_len() == 11 + 10  # prompt and every answer token but the last


def test_variants_measure_mha_gqa_mqa_bytes():
    rows = measure_variants(SMALL, 12)
    assert [(r["kind"], r["kv_heads"]) for r in rows] == [("MHA", 8), ("GQA", 2), ("MQA", 1)]
    assert [r["bytes_per_token"] for r in rows] == [kv_bytes_per_token(2, k, 8, 4) for k in (8, 2, 1)]
