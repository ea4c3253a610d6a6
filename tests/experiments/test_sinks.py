"""Attention sinks and streaming caches on the shipped `gpt`: the caches against the model's plain forward,
the S + W bound, sink mass against the model's own output_attentions, and the sentences for bad settings."""
import copy
import dataclasses

import numpy as np
import pytest
import torch

import models
from experiments import sinks as S

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def gpt():
    return models.load("gpt")


def stepwise(dec, ids, cache):
    """Logits of ids fed one token at a time through cache. -> (1, N, V)"""
    return torch.cat([S.forward(dec, ids[:, t:t + 1], cache)[0] for t in range(ids.shape[1])], dim=1)


def test_a_window_over_the_whole_text_equals_the_full_cache_and_the_plain_forward(gpt):
    ids = S.long_ids(gpt, 40)
    loaded = gpt.model.config._attn_implementation  # models.capture's, as loaded: the run must leave it so
    assert gpt.tokenizer.convert_ids_to_tokens(ids[0, :1].tolist()) == ["<s>"]
    full = stepwise(gpt, ids, S.SinkCache(gpt.n_layers, None))
    streaming = stepwise(gpt, ids, S.SinkCache(gpt.n_layers, window=40, sinks=4))
    assert torch.equal(full, streaming)
    with torch.no_grad():
        plain = gpt.model(input_ids=ids).logits  # (1, N, V): transformers' own eager path
    assert torch.allclose(full, plain, atol=1e-4, rtol=0)  # float32: the two paths sum in another order
    wide = dataclasses.replace(gpt, model=copy.deepcopy(gpt.model).double())  # the test's own copy
    with torch.no_grad():
        plain64 = wide.model(input_ids=ids).logits
    assert (stepwise(wide, ids, S.SinkCache(gpt.n_layers, window=40, sinks=4)) - plain64).abs().max() < 1e-5
    runs = {c: S.score(gpt, ids, c, window=40, sinks=4) for c in S.CACHES}
    logp = torch.log_softmax(plain[0, :-1], dim=-1).gather(-1, ids[0, 1:, None])[:, 0]  # (N - 1,)
    for run in runs.values():
        np.testing.assert_allclose(run.nll, -logp.numpy(), atol=1e-4)
    assert gpt.model.training is False and gpt.model.config._attn_implementation == loaded


def test_the_streaming_cache_never_holds_more_than_sinks_plus_window(gpt):
    ids = S.long_ids(gpt, 60)
    run = S.score(gpt, ids, "window_sinks", window=8, sinks=2)
    assert run.entries.max() == 10 and list(run.entries[:12]) == [*range(1, 11), 10, 10]
    per_entry = 2 * gpt.n_layers * gpt.kv_heads * gpt.head_dim * 4  # k and v, float32
    assert (run.nbytes == run.entries * per_entry).all()
    assert S.score(gpt, ids, "window", window=8, sinks=2).entries.max() == 8
    assert S.score(gpt, ids, "full", window=8, sinks=2).entries.max() == 59
    cache = S.SinkCache(1, window=3, sinks=2)
    for t in range(10):
        k = torch.full((1, 1, 1, 2), float(t))  # (B, kvh, 1, hd) holding its own position
        cache.add(0, k, k)
    assert cache.keys[0][0, 0, :, 0].tolist() == [0, 1, 7, 8, 9]  # the sinks, then the most recent


def test_before_any_eviction_every_cache_scores_alike(gpt):
    ids = S.long_ids(gpt, 30)
    runs = {c: S.score(gpt, ids, c, window=12, sinks=4) for c in S.CACHES}
    for run in runs.values():
        np.testing.assert_allclose(run.nll[:11], runs["full"].nll[:11], atol=1e-4)
    assert not np.allclose(runs["window"].nll[12:], runs["full"].nll[12:], atol=1e-3)  # evictions change it


def test_sink_mass_is_the_models_own_attention_on_the_first_tokens(gpt):
    measured = S.model_sink_mass(gpt, n_windows=2, k=4)
    rows = S.windows(gpt, 2)
    assert rows.shape == (2, 128) and (rows[:, 0] == gpt.tokenizer.bos_token_id).all()
    ours = []  # an independent path: this module's functional forward, its own RoPE and softmax
    for row in rows:
        _, weights = S.forward(gpt, row[None], S.SinkCache(gpt.n_layers, None), want_weights=True)
        ours.append(torch.cat(weights).numpy())  # (L, H, T, T)
    by_hand = np.mean([w[:, :, 1:, 0].mean(axis=-1) for w in ours], axis=0)  # (L, H)
    np.testing.assert_allclose(measured["first"], by_hand, atol=1e-5)
    first_k = np.mean([w[:, :, 4:, :4].sum(axis=-1).mean(axis=-1) for w in ours], axis=0)
    np.testing.assert_allclose(measured["first_k"], first_k, atol=1e-5)
    assert measured["first"].shape == (4, 4) and measured["per_position"].shape == (4, 4, 128)


def test_sink_mass_of_uniform_attention_is_the_uniform_baseline():
    T = 6
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]  # each query spreads evenly over its past
    mass = S.sink_mass([np.broadcast_to(uniform, (2, 3, T, T)), np.broadcast_to(uniform[:4, :4], (2, 3, 4, 4))], k=2)
    np.testing.assert_allclose(mass["first"], mass["uniform_first"])
    np.testing.assert_allclose(mass["per_position"][0, 0], 1 / np.arange(1, T + 1))
    np.testing.assert_allclose(mass["first_k"], np.mean([2 / 3, 2 / 4, 2 / 5, 2 / 6, 2 / 3, 2 / 4]))


@pytest.mark.parametrize("n, window, sinks, said", [
    (100, 0, 0, "at least 1 token"),
    (100, 4, 8, "Keep between 0 and W = 4 sink tokens"),
    (20, 32, 4, "shorter than the window of 32"),
])
def test_bad_settings_get_one_sentence(gpt, n, window, sinks, said):
    with pytest.raises(ValueError, match=said):
        S.score(gpt, S.long_ids(gpt, n), "window_sinks", window, sinks)


def test_a_model_without_rope_in_every_layer_is_refused_in_one_sentence_but_its_sink_mass_is_measured():
    tiny = models.load("tiny")
    mass = S.tiny_sink_mass(tiny, n_strings=3, k=2)
    weights = [tiny.attend(s).weights for s in S.uniform_strings(torch.Generator().manual_seed(S.HELDOUT_SEED), 3)]
    by_hand = sum(w[:, :, 1:, 0].sum(axis=-1) for w in weights) / sum(w.shape[-1] - 1 for w in weights)
    np.testing.assert_allclose(mass["first"], by_hand, atol=1e-6)
    with pytest.raises(ValueError, match="Llama-style"):
        S.check_llama_like(tiny)
