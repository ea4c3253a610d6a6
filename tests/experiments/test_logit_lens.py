"""decompose() against the models' own logits: the parts sum to the logit (final norm's scale frozen) for GPT-2
(Conv1D, LayerNorm, learned positions) and Llama (RMSNorm, RoPE, GQA) random configs built here, every hf family,
the tiny decoder and `gpt`; the lens's last row is the model's own softmax; the residual pieces rebuild the model's
hidden states."""
import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

import models
from experiments.logit_lens import decompose, encode, token_id
from models import capture
from models.hf.decoders import Decoder
from models.residual import components

TEXT = "Attention is all you need."


def _random(model_cls, cfg, folder):
    torch.manual_seed(0)
    model = model_cls(cfg).eval()
    with torch.no_grad():  # larger weights than the default init, so logits and parts are far from zero
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    assert capture.install(model)  # as models.load does: its heads' outputs are recorded
    return Decoder(model=model, tokenizer=AutoTokenizer.from_pretrained(folder), label="random", device="cpu",
                   dtype="float32")


def _check(dec, text=TEXT, target=None):
    d = decompose(dec, text, target)
    ids, _ = encode(dec, text)
    with torch.no_grad():
        ref = dec.model(input_ids=ids).logits[0, -1]
    tid = int(ref.argmax()) if target is None else token_id(dec, target)
    assert d.target_id == tid and d.logit == pytest.approx(float(ref[tid]), abs=1e-6)
    assert abs(d.total - d.logit) < 1e-4 * max(1.0, abs(d.logit)), (d.total, d.logit)
    assert abs(d.logit) > 0.1  # a split of a logit near zero would prove little
    probs = torch.softmax(ref, -1)
    top = probs.topk(5)
    assert [t for t, _ in d.lens[-1]] == dec.tokenizer.convert_ids_to_tokens(top.indices.tolist())
    assert np.allclose([p for _, p in d.lens[-1]], top.values.numpy(), atol=1e-5)
    return d


def test_gpt2_random_config_parts_sum_to_the_logit(tiny_folder):
    folder = tiny_folder("gpt2")
    tok = AutoTokenizer.from_pretrained(folder)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=4, n_positions=64,
                     attn_implementation="eager")
    d = _check(_random(GPT2LMHeadModel, cfg, folder))
    assert set(d.parts) == {"embed", "bias", *(f"L{l}H{h}" for l in range(2) for h in range(4)), "L0.mlp", "L1.mlp"}
    assert d.heads.shape == (2, 4) and abs(d.parts["bias"]) > 0  # GPT-2 has biases and β (its MLPs' in their parts)


def test_llama_random_config_with_gqa_parts_sum_to_any_target(tiny_folder):
    folder = tiny_folder("llama")
    tok = AutoTokenizer.from_pretrained(folder)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
                      attn_implementation="eager")
    dec = _random(LlamaForCausalLM, cfg, folder)
    d = _check(dec)
    other = d.lens[-1][3][0]
    _check(dec, target=other)
    assert d.parts["bias"] == 0.0  # no biases, RMSNorm has no β


@pytest.mark.parametrize("name", ["gpt2", "gpt-neox", "llama", "mistral", "qwen2"])
def test_every_hf_family_rebuilds_its_hidden_states(name, tiny_folder):
    dec = models.load("hf:" + tiny_folder(name))
    ids, _ = encode(dec, TEXT)
    c = components(dec, ids)
    with torch.no_grad():
        hidden = dec.model(input_ids=ids, output_hidden_states=True).hidden_states
    r = c.embed.clone()
    for layer in range(dec.n_layers):  # models.capture keeps the last hidden state before the final norm
        r = r + c.heads[layer].sum(0) + c.attn_bias[layer] + c.mlp[layer]
        assert torch.allclose(r, hidden[layer + 1][0, -1], atol=1e-5)
    d = decompose(dec, TEXT)
    assert abs(d.total - d.logit) < 1e-5


def test_gpt_and_tiny_parts_sum_to_their_logits():
    gpt = models.load("gpt")
    d = decompose(gpt, "def f(x):\n    return")
    assert abs(d.total - d.logit) < 1e-4 and len(d.lens) == 4 and d.heads.shape == (4, 4)
    tiny = models.load("tiny")
    d = decompose(tiny, "31415")
    ids, _ = encode(tiny, "31415")
    with torch.no_grad():
        ref = tiny.net(ids)[0][0, -1]
    assert d.target == "1" and d.logit == pytest.approx(float(ref.max()), rel=1e-6)  # float32 rounding of 19.2
    assert abs(d.total - d.logit) < 1e-4
    assert d.lens[-1][0][0] == "1" and d.lens[-1][0][1] > 0.99


def test_bad_input_gets_a_sentence():
    tiny = models.load("tiny")
    with pytest.raises(ValueError, match="digits"):
        decompose(tiny, "")
    with pytest.raises(ValueError, match="tokens"):
        decompose(tiny, "31415", target="x")
    with pytest.raises(ValueError, match="text encoder"):
        decompose(models.load("bert"), "The river bank")


def test_the_proposed_lesson_claim_on_gpt():
    """The lesson step proposed for this view: on `gpt`, the bracket of 'print(i' is closed by the last layer's heads;
    the lens reads '.' after L1 and L2 and ')' only after L3."""
    d = decompose(models.load("gpt"), "for i in range(10):\n    print(i")
    assert d.target == ")"
    assert [row[0][0] for row in d.lens[1:]] == [".", ".", ")"]
    ranked = sorted(d.parts, key=lambda k: -d.parts[k])
    assert ranked[:2] == ["L3H1", "L3H3"] and d.parts["L3H1"] > 3


@pytest.mark.parametrize("name", ["vit", "bert"])
def test_a_model_with_no_next_token_is_refused_with_the_views_sentence(name):
    """api.next_token on a vision model raised AttributeError ('Vision' has no encode); now the view's sentence."""
    import api
    from limits.errors import UserError
    from models.residual import why_not

    model = models.load(name)
    with pytest.raises(UserError) as err:
        api.next_token(model, "The river bank was")
    assert str(err.value) == why_not(model) and "decoder-only" in str(err.value)


def test_a_bfloat16_olmo_is_split_within_its_rounding(tmp_path, bfloat16_here):
    """OLMo's final LayerNorm has no parameters (so computes in float32) but returns the residual's bfloat16: the
    rebuilt norm is held to bfloat16's rounding, its output's, not float32's, which refused every bfloat16 OLMo."""
    from bench.tiny_any import save

    dec = models.load("hf:" + save("olmo", "causal", tmp_path), "cpu", "bfloat16")
    assert next(dec.model.model.norm.parameters(), None) is None
    d = decompose(dec, TEXT)
    with torch.no_grad():
        ref = dec.model(input_ids=encode(dec, TEXT)[0]).logits[0, -1]
    assert ref.dtype == torch.bfloat16 and d.logit == float(ref[d.target_id])
    assert abs(d.total - d.logit) < 8 * torch.finfo(torch.bfloat16).eps * max(1.0, abs(d.logit)), (d.total, d.logit)
    assert {"L0.mlp", "L1.mlp"} <= set(d.parts) and d.heads.shape[0] == dec.n_layers and np.isfinite(d.heads).all()


@pytest.mark.parametrize("model_type", ["gemma2", "olmo2"])
def test_a_bfloat16_sandwich_norm_is_frozen_within_its_rounding(model_type, tmp_path, bfloat16_here):
    """The norm on each attention output (Gemma 2's, OLMo 2's) is frozen at that output and checked against it up to
    bfloat16's rounding; a float32 tolerance refused every bfloat16 Gemma 2 and OLMo 2."""
    from bench.tiny_any import save

    dec = models.load("hf:" + save(model_type, "causal", tmp_path), "cpu", "bfloat16")
    assert dec.dtype == "bfloat16"
    d = decompose(dec, TEXT)
    assert abs(d.total - d.logit) < 8 * torch.finfo(torch.bfloat16).eps * max(1.0, abs(d.logit)), (d.total, d.logit)
