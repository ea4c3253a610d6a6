"""models.variants' int8_ao: torch.ao dynamic quantization beside torchao's per-channel int8. Its linear weights
are int8 packed parameters, each row quantized as the textbook per-channel formula written here says; its outputs
stay within a stated distance of fp32; its bytes are the packed tensors'; the original is left alone."""
import types

import pytest
import torch
from torch.ao.nn.quantized.dynamic import Linear as AoLinear

from models import variants

pytestmark = pytest.mark.usefixtures("one_thread")

# MiniLM sentence embeddings of held-out paraphrase sentences, int8_ao vs fp32 (measured: worst 0.968, mean 0.976;
# torchao's per-token int8 keeps 0.998): activations get one scale per tensor, so it is the less faithful one
AO_COSINE_MIN, AO_COSINE_MEAN = 0.94, 0.96


def test_linear_weights_are_int8_packed_per_channel_as_the_formula_says():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.LayerNorm(32), torch.nn.Linear(32, 16, bias=False))
    q = variants.make(net, "int8_ao")
    assert q.variant == "int8_ao" and isinstance(q[0], AoLinear) and isinstance(net[0], torch.nn.Linear)
    for fp, ao in ((net[0], q[0]), (net[2], q[2])):
        w, _ = ao._weight_bias()
        assert w.dtype == torch.qint8 and w.qscheme() == torch.per_channel_affine
        absmax = fp.weight.detach().abs().amax(1)                          # (out,) one scale per output channel
        torch.testing.assert_close(w.q_per_channel_scales().float(), absmax / 127.5, rtol=1e-5, atol=0)
        want = torch.clamp(torch.round(fp.weight.detach() / (absmax / 127.5)[:, None]), -128, 127)   # (out, in)
        off = (w.int_repr().float() - want).abs()                           # a half-way rounding may go either way
        assert off.max() <= 1 and (off == 0).float().mean() > 0.99
    # bytes: one int8 a weight, a float64 scale and an int64 zero point per row (torch's per-channel layout)
    assert variants.linear_bytes(q) == (64 * 32 + 32 * 16) + (32 + 16) * 16
    assert variants.model_bytes(q) == variants.linear_bytes(q) + 4 * (32 + 2 * 32)  # + bias, LayerNorm
    assert variants.disk_bytes(q) < variants.disk_bytes(net)
    x = torch.randn(8, 64)
    with torch.no_grad():
        ref, got = net(x), q(x)
    assert 0 < float((ref - got).abs().max()) < 0.05 * float(ref.abs().max())


def test_minilm_int8_ao_stays_within_a_bounded_distance_of_fp32():
    from experiments.paraphrase import embed, task
    from models.hf import load

    bert = load("bert")
    held = task(bert.tokenizer, 0, 8)[1]
    q = variants.make(bert, "int8_ao", "bert")
    assert q.variant == "int8_ao" and not variants.plain_linears(q)
    assert all(isinstance(m, torch.nn.Linear) for m in [bert.model.encoder.layer[0].attention.self.query])
    with torch.no_grad():
        ref, got = embed(bert.model, held), embed(q.model, held)
    cos = torch.nn.functional.cosine_similarity(ref, got)
    assert cos.min() > AO_COSINE_MIN and cos.mean() > AO_COSINE_MEAN and cos.mean() < 1 - 1e-6
    assert variants.linear_bytes(q) <= 0.3 * variants.linear_bytes(bert)


def test_gpt2_conv1d_reaches_torch_ao_too():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=64, n_layer=2, n_head=4,
                                      attn_implementation="eager")).eval()
    q = variants.make(types.SimpleNamespace(model=gpt2, device="cpu", notices=()), "int8_ao")
    assert isinstance(q.model.transformer.h[0].attn.c_attn, AoLinear)
    ids = torch.randint(0, 64, (2, 12))
    with torch.no_grad():
        ref, got = gpt2(input_ids=ids).logits, q.model(input_ids=ids).logits
    assert 0 < float((ref - got).abs().max()) < 0.1 * float(ref.abs().max())


def test_a_gpu_or_other_device_gets_a_sentence_not_a_traceback():
    layer = torch.nn.Sequential(torch.nn.Linear(4, 4)).to("meta")
    with pytest.raises(NotImplementedError, match="CPU only"):
        variants.ao_quantize(layer)
