"""What the KV cache view reads of experiments.kv_cache besides the timings: the warmed decoder is an ordinary
decoder of the shape, the summary's bytes are the cache's own and the formula's, and the tiny decoder's steps end
with the sorted digits and a cache that grew one position per written token."""
import models
from analysis.kv import human_bytes, kv_bytes_per_token
from data.sorting import VOCAB, encode
from experiments import kv_cache as E
from models.decoder import DecoderConfig, prompt


def test_the_summary_says_the_measured_bytes_the_formula_and_the_speed_up():
    shape = (1, 32, 4, 2)
    net = E.warm_decoder(shape, "float32", "cpu", 64, 1 << 30)
    assert (net.cfg.layers, net.cfg.d_model, net.cfg.heads, net.cfg.kv_heads) == shape
    records = E.generate_modes(lambda f: None, net, prompt(net.cfg), 16, {"cached": E.Record(), "uncached": E.Record()})
    per_token = kv_bytes_per_token(1, 2, net.cfg.head_dim, 4)
    T = records["cached"].positions[-1]
    assert records["cached"].cache_bytes[-1] == per_token * T  # the cache's tensors hold what the formula says
    text = E.summary(records, per_token, 16)
    assert f"**{human_bytes(per_token * T)}** measured" in text and f"{per_token:,} × {T}" in text
    assert "same tokens: **True**" in text
    assert "same tokens" not in E.summary({"cached": records["cached"]}, per_token, 16)  # the cached run alone


def test_measure_shape_is_measure_variants_of_that_shape():
    rows = E.measure_shape(None, (1, 32, 4, 4), "float32", "cpu", 4, 1 << 30)
    assert [r["kv_heads"] for r in rows] == [4, 2, 1]
    assert [r["bytes_per_token"] for r in rows] == [kv_bytes_per_token(1, k, 8, 4) for k in (4, 2, 1)]
    assert E.variants_flops(DecoderConfig(1, 32, 4, 4), 4) > 0


def test_tiny_steps_write_the_sorted_digits_one_cached_position_at_a_time():
    tiny = models.load("tiny")
    ids = encode("31415")
    steps = list(E.tiny_steps(tiny, ids))
    written, _, positions, nbytes = steps[-1]
    assert "".join(VOCAB[t] for t in written).startswith("11345")
    assert [s[2] for s in steps] == list(range(len(ids), len(ids) + len(steps)))
    assert nbytes > steps[0][3] > 0
