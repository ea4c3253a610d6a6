"""The KV view's real-decoder section: what the built-in gpt writes with its cache, kept once for every visitor."""
import numpy as np
import pytest
import torch

from bench.tiny_any import save
from experiments import kv_cache as E
from ui import kv_cache_hf
from ui.runtime import cache


def test_the_written_tokens_are_greedy_generate_and_are_computed_once():
    dec = cache.model("gpt", "cpu", "float32")
    run = kv_cache_hf._write("gpt", "cpu", "float32", "The river", 6)
    ids, _ = dec.encode("The river", room=6)
    with torch.no_grad():  # transformers' own greedy generate, the independent path
        out = dec.model.generate(ids, max_new_tokens=6, do_sample=False, eos_token_id=None, pad_token_id=0)
    assert run.written == out[0, ids.shape[1]:].tolist()
    assert run.positions == list(range(ids.shape[1], ids.shape[1] + 6))
    assert run.norms.shape == (2 * dec.n_layers, ids.shape[1] + 5)  # the last token is never fed back
    assert kv_cache_hf._write("gpt", "cpu", "float32", "The river", 6) is run  # a second visitor gets the kept result


@pytest.mark.parametrize("model_type, extra, windows", [
    ("qwen2", dict(use_sliding_window=True, sliding_window=4, max_window_layers=1), [None, 4]),  # layer 1 windowed
    ("mistral", dict(sliding_window=4), [4, 4]),
])
def test_a_sliding_window_cache_is_measured_against_each_layers_window(tmp_path, model_type, extra, windows):
    """A Qwen2 windowing one layer raised 'stack expects each tensor to be equal size' (its layers hold different
    counts); a Mistral's 768 B were set against 8.25 KiB with no word of the window, and the grid labelled its
    columns with the first tokens while the cache held the last ones."""
    from analysis.kv import bytes_cached, human_bytes, kv_bytes_per_token

    name = "hf:" + save(model_type, "causal", tmp_path, **extra)
    dec = cache.model(name, "cpu", "float32")
    assert dec.windows == windows
    run = kv_cache_hf._write(name, "cpu", "float32", "abcdefghij", 8)
    T = run.positions[-1]
    held = [len(layer.keys[0, 0]) for layer in dec.model(torch.tensor([run.prompt + run.written[:-1]]),
                                                          use_cache=True).past_key_values.layers]
    assert held == [T if w is None else 3 for w in windows]  # the last W - 1, transformers' own cache, fed at once
    for t, measured in zip(run.positions, run.measured):  # the formula, each layer's kept positions, every step
        assert measured == bytes_cached(t, windows, kv_bytes_per_token(1, dec.kv_heads, dec.head_dim, 4))
    assert run.norms.shape == (2 * dec.n_layers, T)  # one column a position, each layer's kept ones at the right
    for layer, w in enumerate(windows):
        kept = ~np.isnan(run.norms[2 * layer])
        assert kept.sum() == (T if w is None else 3) and (w is None or kept[-3:].all())
    sentence = E.formula(dec, 4, T)
    total = bytes_cached(T, windows, kv_bytes_per_token(1, dec.kv_heads, dec.head_dim, 4))
    assert sentence.startswith(f"the formula says {human_bytes(total)}: ")
    assert "with a 4-token sliding window keep" in sentence and "last 3 (a 4-token window caches 4 − 1 keys" in sentence


@pytest.mark.parametrize("model_type", ["deepseek_v3", "mistral4", "minicpm3"])
def test_multi_head_latent_attention_caches_a_latent_and_the_formula_says_so(tmp_path, model_type):
    """transformers caches multi-head latent attention's compressed latent (kv_lora_rank wide) and its rotary key
    (qk_rope_head_dim) per layer and position, not each head's key and value: the formula gave 2 · 4 kv heads · 4 ·
    4 bytes = 128 where the cache held 80. Each step's bytes equal the widths of the tensors transformers' own cache
    holds, read here, and the formula's."""
    import models

    dec = models.load("hf:" + save(model_type, "causal", tmp_path))
    run = E.write(dec, "def attention(q, k, v):", 4)
    ids, _ = dec.encode("def attention(q, k, v):", room=4)
    with torch.no_grad():  # the cache transformers fills, its tensors' widths read independently of the formula
        cache = dec.model(input_ids=ids, use_cache=True).past_key_values
    widths = {(cache.layers[i].keys.shape[1:2] + cache.layers[i].keys.shape[3:],
               cache.layers[i].values.shape[1:2] + cache.layers[i].values.shape[3:]) for i in range(dec.n_layers)}
    assert widths == {((1, dec.config.kv_lora_rank), (1, dec.config.qk_rope_head_dim))}  # one latent, every head's
    per = (dec.config.kv_lora_rank + dec.config.qk_rope_head_dim) * 4                    # float32
    assert run.measured == [per * dec.n_layers * t for t in run.positions]
    assert run.measured == [E.formula_bytes(dec, 4, t) for t in run.positions]
    sentence = E.formula(dec, 4, run.positions[-1])
    assert f"({dec.config.kv_lora_rank} latent + {dec.config.qk_rope_head_dim} rotary key) · 4 bytes = {per}" \
        in sentence
