"""A pattern laid on MiniLM and the tiny decoder for one call: exact when it keeps everything, equal to an
independent implementation (our sparse_attention over the model's own weights, or torch's SDPA) when it masks."""
import functools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from analysis import sparsity
from analysis.efficient import sparse_attention
from experiments import sparse_models as sm
from models import load
from models.decoder import DecoderConfig, build

TEXT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def bert():
    return load("bert")


@pytest.fixture(scope="module")
def tiny():
    return load("tiny")


def hooks(module: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in module.modules())


@torch.no_grad()
def bert_by_hand(model, enc: dict, mask: torch.Tensor) -> torch.Tensor:
    """MiniLM's forward written out from its weights, attention by analysis.efficient.sparse_attention."""
    h = model.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"])  # (1, T, C)
    for layer in model.encoder.layer:
        sa = layer.attention.self
        heads = lambda x, sa=sa: x.view(1, -1, sa.num_attention_heads, sa.attention_head_size).transpose(1, 2)  # noqa: E731
        ctx = sparse_attention(heads(sa.query(h)), heads(sa.key(h)), heads(sa.value(h)), mask, block=4)  # (1, H, T, hs)
        ctx = ctx.transpose(1, 2).flatten(2)  # (1, T, C)
        a = layer.attention.output.LayerNorm(layer.attention.output.dense(ctx) + h)
        h = layer.output(layer.intermediate(a), a)
    return h


def test_bert_with_an_all_true_pattern_is_the_dense_model_exactly(bert):
    enc, _ = bert.encode(TEXT)
    T = enc["input_ids"].shape[1]
    att_d, hid_d, _ = sm.encoder_run(bert, enc, None)
    att_m, hid_m, _ = sm.encoder_run(bert, enc, torch.ones(T, T, dtype=torch.bool))
    assert torch.equal(att_d, att_m) and all(torch.equal(a, b) for a, b in zip(hid_d, hid_m))
    eff = sm.encoder_effect(bert, TEXT, None, sparsity.dense(T))
    assert eff.output_cosine == pytest.approx(1, abs=1e-12) and eff.sentence_cosine == pytest.approx(1, abs=1e-12)
    assert (eff.dropped_mass == 0).all() and (eff.argmax_agree == 1).all() and eff.top1 is None


@pytest.mark.parametrize("pattern", ["sliding_window", "longformer", "bigbird", "block_sparse"])
def test_bert_with_a_pattern_equals_the_model_written_out_with_sparse_attention(bert, pattern):
    enc, _ = bert.encode(TEXT)
    T = enc["input_ids"].shape[1]
    mask = sparsity.build(pattern, T, w=2, block=4, band=0, every=3, globals_=(0,))
    att, hid, _ = sm.encoder_run(bert, enc, mask)
    torch.testing.assert_close(hid[-1], bert_by_hand(bert.model, enc, mask), atol=2e-5, rtol=0)
    assert float(att[..., ~mask].abs().max()) == 0  # dropped pairs get exactly zero weight
    torch.testing.assert_close(att.sum(-1), torch.ones(att.shape[:-1]))


def test_bert_effect_numbers_come_from_the_dense_trace(bert):
    tr = bert.attend(TEXT)
    T = len(tr.tokens)
    mask = sparsity.sliding_window(T, 1)
    before = hooks(bert.model)
    eff = sm.encoder_effect(bert, TEXT, None, mask)
    dropped = (tr.weights * ~mask.numpy()).sum(-1).mean(axis=(1, 2))  # [L]: the trace's own weights
    np.testing.assert_allclose(eff.dropped_mass, dropped, atol=1e-5)
    np.testing.assert_allclose(eff.dense, tr.weights, atol=1e-6)
    assert eff.output_cosine < 0.99 and eff.layer_cosine[0] > eff.layer_cosine[-1]
    assert eff.tokens == tr.tokens and eff.mask.shape == (T, T)
    assert hooks(bert.model) == before  # nothing left on the shared model
    np.testing.assert_array_equal(bert.attend(TEXT).weights, tr.weights)


def tiny_by_hand(net, idx: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The tiny decoder's forward written out, attention by torch's SDPA with (causal AND mask)."""
    T = idx.shape[1]
    allowed = torch.ones(T, T, dtype=torch.bool).tril() & mask
    x = net.wte(idx) + net.wpe(torch.arange(T))
    for block in net.blocks:
        q, k, v = block.attn.qkv(block.ln_1(x))  # (1, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed).transpose(1, 2).flatten(2)
        x = x + block.attn.c_proj(y)
        x = x + block.mlp(block.ln_2(x))
    return net.lm_head(net.ln_f(x))


@torch.no_grad()
def test_tiny_mask_argument_none_or_all_true_changes_nothing_and_a_pattern_equals_sdpa(tiny):
    idx = torch.tensor([[3, 1, 4, 1, 5, 10, 1, 1, 3, 4, 5]])
    base, atts = tiny.net(idx)
    for keep_all in (None, torch.ones(11, 11, dtype=torch.bool)):
        logits, atts2 = tiny.net(idx, mask=keep_all)
        assert torch.equal(logits, base) and all(torch.equal(a, b) for a, b in zip(atts, atts2))
    for pattern in ("sliding_window", "dilated_window", "bigbird"):
        mask = sparsity.build(pattern, 11, w=2, dilation=2, globals_=(0,))
        logits, atts3 = tiny.net(idx, mask=mask)
        torch.testing.assert_close(logits, tiny_by_hand(tiny.net, idx, mask), atol=1e-5, rtol=0)
        assert all(float(a[0][:, ~mask].abs().max()) == 0 for a in atts3)


def test_tiny_effect_dense_pattern_writes_the_same_answer_and_a_window_changes_it(tiny):
    dense = sm.decoder_effect(tiny, "9081726354", functools.partial(sparsity.build, "dense"))
    assert dense.answer == ("0123456789", "0123456789") == (tiny.attend("9081726354").output,) * 2
    assert dense.top1 == 1 and dense.output_cosine == pytest.approx(1) and (dense.dropped_mass == 0).all()
    window = sm.decoder_effect(tiny, "9081726354", functools.partial(sparsity.build, "sliding_window", w=2))
    assert window.answer[0] == "0123456789" and window.answer[1] != "0123456789"
    assert window.top1 < 1 and (window.dropped_mass > 0).all()
    assert not window.mask[np.triu_indices(len(window.tokens), 1)].any()  # causal kept on top


@torch.no_grad()
def test_the_kv_decoder_takes_the_same_per_call_mask():
    net = build(DecoderConfig(layers=1, d_model=32, heads=4, kv_heads=2))
    idx = torch.arange(9)[None]
    base, _ = net(idx)
    same, _ = net(idx, mask=torch.ones(9, 9, dtype=torch.bool))
    masked, att = net(idx, mask=sparsity.sliding_window(9, 1))
    assert torch.equal(base, same) and not torch.allclose(base, masked)
    assert float(att[0][0][:, ~sparsity.sliding_window(9, 1)].abs().max()) == 0


def test_a_mask_of_the_wrong_size_is_refused(bert):
    with pytest.raises(ValueError, match="boolean \\[.*\\] mask for these"):
        sm.encoder_effect(bert, TEXT, None, sparsity.dense(3))
