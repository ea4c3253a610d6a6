"""models.variants and models.qat: copies that leave the original alone, fp32 exact, int8 within a stated
tolerance on held-out inputs, sizes equal to the tensors' bytes, and a clear fallback where a variant cannot run."""
import copy
import json
import types

import pytest
import torch
from safetensors import safe_open

from models import qat, variants

pytestmark = pytest.mark.usefixtures("one_thread")

# int8 tolerances on held-out inputs, per item (measured: tiny logits 0.991 at the worst answer position, MiniLM
# sentence embeddings 0.99): and the same answer token everywhere
TINY_COSINE, MINILM_COSINE = 0.98, 0.98
# built-in gpt: next-token logits on 8 held-out windows (measured 0.9985 at the worst position, 97.7 % the same
# next token); vit: class logits on the 450 held-out digits (measured 0.9997, every class the same)
GPT_COSINE, GPT_AGREEMENT, VIT_COSINE = 0.995, 0.95, 0.998


@pytest.fixture(scope="module")
def tiny():
    from models.tiny import load

    return load()


@pytest.fixture(scope="module")
def bert():
    from models.hf import load

    return load("bert")


def held_out_logits(net, n=200):
    from data.sorting import held_out
    from experiments.sorting import encode

    x, y = encode(held_out(n))
    with torch.no_grad():
        logits, _ = net(x)
    return logits[y != -1].float()                                          # (answer positions, V)


def fake_quantized(module) -> int:
    """How many layers of `module` are fake-quantized now (the app never asks: models.qat prepares and converts)."""
    import torchao.quantization.qat as torchao_qat  # after models.variants quieted its extension-loading noise

    return sum(isinstance(m, torchao_qat.FakeQuantizedLinear) for m in module.modules())


def test_fp32_equals_the_original_and_int8_leaves_it_alone(tiny):
    before = {k: v.clone() for k, v in tiny.net.state_dict().items()}
    same = variants.make(tiny, "fp32", "tiny")
    assert same.net is not tiny.net and same.variant == "fp32"
    assert torch.equal(held_out_logits(same.net), held_out_logits(tiny.net))
    assert (same.attend("31415").weights == tiny.attend("31415").weights).all()
    q = variants.make(tiny, "int8_dynamic", "tiny")
    assert type(q.net.blocks[0].attn.c_attn.weight).__name__ == "Int8Tensor"
    after = tiny.net.state_dict()
    assert all(type(after[k]) is torch.Tensor and torch.equal(after[k], v) for k, v in before.items())


def test_int8_tiny_within_tolerance_and_qat_not_worse(tiny):
    ref = held_out_logits(tiny.net)
    for key in ("int8_dynamic", "int8_qat"):
        v = variants.make(tiny, key, "tiny")
        assert v.variant == key
        got = held_out_logits(v.net)
        assert torch.nn.functional.cosine_similarity(got, ref).min() > TINY_COSINE
        assert (got.argmax(-1) == ref.argmax(-1)).all()
    with safe_open(str(variants.qat_file("tiny")), "pt") as f:
        record = json.loads(f.metadata()["record"])
    assert record["int8_qat_exact"] >= record["int8_ptq_exact"] and record["module"] == "net"


@pytest.mark.slow
def test_int8_minilm_within_tolerance_on_held_out_pairs(bert):
    from experiments.paraphrase import embed, task

    held = task(bert.tokenizer, 0, 8)[1]
    q = variants.make(bert, "int8_dynamic", "bert")
    with torch.no_grad():
        ref, got = embed(bert.model, held), embed(q.model, held)
    assert torch.nn.functional.cosine_similarity(ref, got).min() > MINILM_COSINE
    assert variants.linear_bytes(q) <= 0.35 * variants.linear_bytes(bert)


def test_sizes_are_the_tensors_bytes():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.LayerNorm(32), torch.nn.Linear(32, 16, bias=False))
    fp32 = variants.make(net, "fp32")
    assert variants.linear_bytes(fp32) == 4 * (64 * 32 + 32 * 16)
    assert variants.model_bytes(fp32) == 4 * sum(p.numel() for p in net.parameters())
    assert variants.model_bytes(variants.make(net, "fp16")) == 2 * sum(p.numel() for p in net.parameters())
    q = variants.make(net, "int8_dynamic")
    inner = [(w.qdata, w.scale, w.zero_point) for w in (q[0].weight, q[2].weight)]
    assert variants.linear_bytes(q) == sum(t.numel() * t.element_size() for ts in inner for t in ts)
    assert variants.linear_bytes(q) == (64 * 32 + 32 * 16) + (32 + 16) * (4 + 1)  # int8, fp32 scale, int8 zero
    assert variants.model_bytes(q) == variants.linear_bytes(q) + 4 * (32 + 2 * 32)  # + bias, LayerNorm
    four = variants.make(net, "int4_weight_only")
    assert four[0].weight.qdata.numel() == 32 * 64 // 2  # two int4 numbers a byte
    assert variants.disk_bytes(q) < variants.disk_bytes(fp32)


def test_unsupported_precision_says_why_and_falls_back(tiny):
    gpu = types.SimpleNamespace(net=torch.nn.Linear(4, 4), device="cuda", notices=(), label="x")  # not here
    v = variants.make(gpu, "bf16")
    assert v.variant == "fp32" and v.net.weight.dtype == torch.float32
    assert "does not run on cuda" in v.notices[-1] and "Showing fp32 instead." in v.notices[-1]
    assert "int8 QAT weights ship for gpt, tiny only" in variants.unsupported("int8_qat", "cpu", "bert")
    assert variants.make(tiny, "float3", "tiny").variant == "fp32"
    assert "Unknown precision 'float3'" in variants.make(tiny, "float3", "tiny").notices[-1]


def test_tiny_random_hf_models_take_every_variant_and_qat():
    """The hook the built-in gpt and vit use: Hugging Face modules built here, random weights."""
    from transformers import LlamaConfig, LlamaForCausalLM, ViTConfig, ViTForImageClassification

    from experiments.precision import agreement, causal_lm_probe, classifier_probe

    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2)).eval()
    vit = ViTForImageClassification(ViTConfig(image_size=8, patch_size=2, num_channels=1, hidden_size=64,
                                              num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                                              num_labels=10)).eval()
    ids = torch.randint(0, 64, (4, 16))
    pixels, labels = torch.randn(8, 1, 8, 8), torch.arange(8)
    probes = {"llama": causal_lm_probe(lambda m: m.model, ids, "random ids"),
              "vit": classifier_probe(lambda m: m.model, pixels, labels, "random images")}
    for name, module in (("llama", llama), ("vit", vit)):
        wrapper = types.SimpleNamespace(model=module, device="cpu", notices=())
        ref = probes[name].outputs(wrapper)
        for key in ("fp32", "bf16", "int8_dynamic", "int4_weight_only"):
            v = variants.make(wrapper, key)
            assert v.variant == key, v.notices
            res = agreement(ref, probes[name].outputs(v))
            assert res["cosine"] > (1 - 1e-12 if key == "fp32" else 0.95), (name, key, res)
    qat.prepare(llama)
    assert fake_quantized(llama) == 2 * 7 + 1  # q, k, v, o, gate, up, down per layer, and the LM head
    batches = iter([ids] * 3)
    qat.finetune(llama, batches, lambda m, b: m(input_ids=b, labels=b).loss, steps=3, lr=1e-3, warmup=1)
    qat.convert(llama)
    assert fake_quantized(llama) == 0 and type(llama.lm_head) is torch.nn.Linear


@pytest.mark.parametrize("name", ["gpt", "vit"])
def test_builtin_gpt_and_vit_fp32_exact_int8_within_tolerance_int4_runs(name):
    """torchao on the Llama decoder's and the ViT's linear layers, judged on held-out inputs through their probes."""
    from experiments.precision import probe_for
    from models import load

    m = load(name)
    probe = probe_for(m, "", 450, name=name)
    ref = probe.outputs(m)
    same = variants.make(m, "fp32", name)
    assert same.model is not m.model and torch.equal(probe.outputs(same).vectors, ref.vectors)
    q = variants.make(m, "int8_dynamic", name)
    first = q.model.model.layers[0].self_attn if name == "gpt" else q.model.vit.layers[0].attention
    assert type(first.q_proj.weight).__name__ == "Int8Tensor" and q.variant == "int8_dynamic"
    got = probe.outputs(q)
    cos = torch.nn.functional.cosine_similarity(got.vectors.double(), ref.vectors.double(), dim=-1)
    assert cos.min() > (GPT_COSINE if name == "gpt" else VIT_COSINE)
    agree = (got.choices == ref.choices).double().mean()
    assert agree >= GPT_AGREEMENT if name == "gpt" else agree == 1.0
    assert variants.linear_bytes(q) < 0.35 * variants.linear_bytes(m)
    four = variants.make(m, "int4_weight_only", name)   # the head (2052 words, 10 classes) is no multiple of 16
    assert four.variant == "int4_weight_only" and any("1 linear layer of a shape" in n for n in four.notices)
    assert probe.outputs(four).metric == pytest.approx(ref.metric, rel=0.05)
    if name == "gpt":  # QAT weights ship for gpt: the record's int8 perplexity recomputed, below PTQ's
        with safe_open(str(variants.qat_file("gpt")), "pt") as f:
            record = json.loads(f.metadata()["record"])
        trained = variants.make(m, "int8_qat", name)
        assert trained.variant == "int8_qat" and type(trained.model.lm_head.weight).__name__ == "Int8Tensor"
        assert probe.outputs(trained).metric == pytest.approx(record["int8_qat_perplexity"], rel=1e-4)
        assert got.metric == pytest.approx(record["int8_ptq_perplexity"], rel=1e-4)
        assert record["int8_qat_perplexity"] < record["int8_ptq_perplexity"]


def test_gpt2_conv1d_layers_are_quantized_and_the_copy_is_smaller():
    """GPT-2 writes its projections as transformers' Conv1D, not nn.Linear: they are rewritten as Linear in the
    copy and quantized, so the int8 copy is smaller than fp32 and its attention moves; fp32 stays exact."""
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.pytorch_utils import Conv1D

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=64, n_layer=2, n_head=4,
                                      attn_implementation="eager")).eval()
    wrapper = types.SimpleNamespace(model=gpt2, device="cpu", notices=())
    ids = torch.randint(0, 64, (2, 12))
    with torch.no_grad():
        ref = gpt2(input_ids=ids, output_attentions=True)
    q = variants.make(wrapper, "int8_dynamic")
    assert q.variant == "int8_dynamic" and not any(isinstance(m, Conv1D) for m in q.model.modules())
    assert any(isinstance(m, Conv1D) for m in gpt2.modules())  # the original keeps its layers
    assert type(q.model.transformer.h[0].attn.c_attn.weight).__name__ == "Int8Tensor"
    assert variants.model_bytes(q) < 0.6 * variants.model_bytes(wrapper)
    with torch.no_grad():
        got = q.model(input_ids=ids, output_attentions=True)
    moved = max(float((a - b).abs().max()) for a, b in zip(got.attentions, ref.attentions))
    assert 0 < moved < 0.2
    linear = copy.deepcopy(gpt2)
    assert variants.conv1d_as_linear(linear) == 2 * 4  # c_attn, c_proj, mlp c_fc, mlp c_proj per layer
    with torch.no_grad():
        torch.testing.assert_close(linear(input_ids=ids).logits, ref.logits, rtol=0, atol=1e-5)


@pytest.mark.parametrize("error, logged", [(RuntimeError("no kernel for this dtype"), False),
                                           (NotImplementedError("no such layer"), False),
                                           (KeyError("a programming error"), True),
                                           (TypeError("a wrong argument"), True),
                                           (AssertionError("a broken invariant"), True)])
def test_a_refusal_is_a_sentence_and_anything_else_is_logged_with_its_traceback(tiny, monkeypatch, caplog,
                                                                              error, logged):
    def fail(*args):
        raise error

    monkeypatch.setattr(variants, "_apply", fail)
    with caplog.at_level("ERROR", logger="models.variants"):
        v = variants.make(tiny, "bf16", "tiny")
    assert v.variant == "fp32" and any(f"failed on this model ({type(error).__name__})" in n for n in v.notices)
    records = [r for r in caplog.records if r.name == "models.variants"]
    assert bool(records) == logged and all(r.exc_info for r in records)


def test_a_failed_probe_is_probed_again_and_one_that_ran_is_kept(monkeypatch):
    """A failure (here a kernel that refuses once: e.g. memory that was short) is never kept until restart."""
    monkeypatch.setattr(variants, "_RAN", set())
    runs = []

    def quantize(layer):
        runs.append(len(runs))
        if len(runs) == 1:
            raise RuntimeError("out of memory")

    monkeypatch.setattr(variants, "ao_quantize", quantize)
    assert "does not run on cpu here (RuntimeError)" in variants._probe("int8_ao", "cpu")
    assert variants._probe("int8_ao", "cpu") is None and variants._probe("int8_ao", "cpu") is None
    assert runs == [0, 1]  # probed twice: after the failure, not after the run that worked


@pytest.mark.parametrize("key", ["int8_dynamic", "int8_per_tensor", "int8_ao", "bf16"])
def test_a_variant_shares_the_embedding_tables_it_leaves_alone_and_never_writes_the_original(key, monkeypatch):
    """A float32 int8 copy holds the original's embedding tables (MiniLM: 47 MB a copy saved); GPT-2's output
    layer, tied to them, is still quantized in the copy only. The copy computes what an unshared copy computes; a
    cast (bf16) shares nothing."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=64, n_layer=2, n_head=4,
                                      attn_implementation="eager")).eval()
    assert gpt2.lm_head.weight is gpt2.transformer.wte.weight
    wrapper = types.SimpleNamespace(model=gpt2, device="cpu", notices=())
    before = {k: v.clone() for k, v in gpt2.state_dict().items()}
    ids = torch.randint(0, 64, (2, 12))
    q = variants.make(wrapper, key)
    shared = q.model.transformer.wte.weight is gpt2.transformer.wte.weight
    assert shared == (key != "bf16")
    assert (q.model.transformer.wpe.weight is gpt2.transformer.wpe.weight) == shared
    if key != "bf16":
        assert q.model.lm_head is not gpt2.lm_head and type(q.model.lm_head.weight) is not torch.nn.Parameter
    after = gpt2.state_dict()
    assert all(type(after[k]) is torch.Tensor and torch.equal(after[k], v) for k, v in before.items())
    monkeypatch.setattr(variants, "_unchanged", lambda model, key: [])
    alone = variants.make(wrapper, key)
    assert alone.model.transformer.wte.weight is not gpt2.transformer.wte.weight
    with torch.no_grad():
        assert torch.equal(q.model(input_ids=ids).logits, alone.model(input_ids=ids).logits)
