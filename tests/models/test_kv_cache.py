import pytest
import torch

from models.kv_cache import KVCache


def test_append_grows_along_time_and_returns_everything_so_far():
    cache = KVCache(n_layers=2)
    k1, v1 = torch.randn(1, 3, 5, 4), torch.randn(1, 3, 5, 4)  # (B, kvh, T, hd)
    k2, v2 = torch.randn(1, 3, 1, 4), torch.randn(1, 3, 1, 4)
    cache.append(0, k1, v1)
    k_all, v_all = cache.append(0, k2, v2)
    assert k_all.shape == (1, 3, 6, 4) and cache.seq_len(0) == 6 and cache.seq_len(1) == 0
    assert torch.equal(k_all[:, :, :5], k1) and torch.equal(v_all[:, :, 5:], v2)


@pytest.mark.parametrize("dtype, size", [(torch.float32, 4), (torch.float16, 2)])
def test_nbytes_is_measured_from_the_tensors(dtype, size):
    cache = KVCache(n_layers=3)
    for layer in range(3):
        cache.append(layer, torch.zeros(2, 4, 7, 8, dtype=dtype), torch.zeros(2, 4, 7, 8, dtype=dtype))
    per_layer = 2 * (2 * 4 * 7 * 8) * size  # k and v
    assert cache.bytes_per_layer() == [per_layer] * 3
    assert cache.nbytes() == 3 * per_layer


def test_mismatched_k_and_v_are_refused():
    with pytest.raises(ValueError, match="head_dim"):
        KVCache(1).append(0, torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 5))


def test_a_cache_with_capacity_holds_what_concatenation_holds_in_one_buffer():
    grown, fixed = KVCache(1), KVCache(1, capacity=8)
    chunks = [torch.randn(2, 3, t, 4) for t in (5, 1, 1)]  # (B, kvh, T, hd)
    for c in chunks:
        k_g, v_g = grown.append(0, c, -c)
        k_f, v_f = fixed.append(0, c, -c)
        assert torch.equal(k_f, k_g) and torch.equal(v_f, v_g)
    assert k_f.untyped_storage().data_ptr() == fixed.keys[0].untyped_storage().data_ptr()  # written in place
    assert fixed.nbytes() == grown.nbytes() == 2 * (2 * 3 * 7 * 4) * 4
    reserved = [t.untyped_storage().nbytes() for t in (fixed.keys[0], fixed.values[0])]  # the buffers behind the views
    assert sum(reserved) == 2 * (2 * 3 * 8 * 4) * 4  # all 8 positions, allocated once


def test_a_full_cache_says_so():
    cache = KVCache(1, capacity=3)
    cache.append(0, torch.zeros(1, 1, 3, 2), torch.zeros(1, 1, 3, 2))
    with pytest.raises(ValueError, match="holds 3 positions and 4 were asked for"):
        cache.append(0, torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2))
