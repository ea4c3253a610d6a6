"""What models/ reads of a decoder's layout, on tiny random models of each family (bench.tiny_any): Falcon's key/value
heads as its attention splits query_key_value, the layer's stages (models.block), and a prompt without the end
token a tokenizer appends."""
import pytest
import torch

import models
from bench.tiny_any import save
from experiments import kv_cache as E
from models import block


@pytest.mark.parametrize("extra, kv, cached", [
    (dict(multi_query=True, new_decoder_architecture=False), 1, 1),                  # falcon-7b: 4 q + 1 k + 1 v
    (dict(multi_query=False, new_decoder_architecture=False), 4, 4),                 # one k and v per query head
    (dict(new_decoder_architecture=True, num_kv_heads=2, multi_query=False), 2, 4),  # falcon-40b: groups, broadcast
])
def test_falcon_kv_heads_are_those_its_attention_splits_and_the_formula_matches_the_cache(tmp_path, extra, kv,
                                                                                          cached):
    """A multi-query Falcon said kv_heads 4 (its config's num_kv_heads, which the attention ignores), so the formula
    gave 12.5 KiB where the cache held 3.12. transformers caches a falcon-40b layout's keys once per query head."""
    dec = models.load("hf:" + save("falcon", "causal", tmp_path, **extra))
    width = dec.model.transformer.h[0].self_attention.query_key_value.out_features
    assert width == (dec.n_heads + 2 * kv) * dec.head_dim  # the weights' own count, independent of the config
    assert dec.kv_heads == kv and dec.kv_head_of == [h * kv // dec.n_heads for h in range(dec.n_heads)]
    run = E.write(dec, "def attention(q, k, v):", 4)
    assert dec.cached_kv_heads == cached
    assert run.measured[-1] == 2 * dec.n_layers * cached * dec.head_dim * 4 * run.positions[-1]
    assert f": 2 · {kv} kv heads" in E.formula(dec, 4, run.positions[-1])
    assert (f"share {kv} key/value head" in dec.label) == (kv < dec.n_heads)


@pytest.mark.parametrize("model_type, extra, want", [
    ("falcon", dict(parallel_attn=True), dict(positions="rotary", parallel=True, norms=1)),
    ("falcon", dict(parallel_attn=False), dict(positions="rotary", parallel=False, norms=2)),
    ("falcon", dict(alibi=True), dict(positions="alibi", parallel=True)),
    ("gptj", {}, dict(positions="rotary", parallel=True, norms=1)),
    ("gpt_neox", dict(use_parallel_residual=True), dict(positions="rotary", parallel=True, norms=2)),
    ("bloom", {}, dict(positions="alibi", parallel=False, pre=True, post=False)),
    ("gemma2", {}, dict(positions="rotary", parallel=False, pre=True, post=True, norms=4)),
    ("olmo2", {}, dict(positions="rotary", parallel=False, pre=False, post=True)),
    ("opt", dict(do_layer_norm_before=False), dict(positions="learned", pre=False, after_add=True)),
    ("opt", {}, dict(positions="learned", parallel=False, pre=True, after_add=False)),
    ("gpt2", {}, dict(positions="learned", parallel=False, pre=True, post=False)),
    ("xglm", {}, dict(positions="sinusoidal", parallel=False, pre=True, post=False)),  # embed_positions: not learned
    ("qwen3", {}, dict(positions="rotary", parallel=False, pre=True, post=False)),
    ("phi3", {}, dict(positions="rotary", parallel=False, pre=True, post=False)),
])
def test_the_block_reader_follows_each_layout(tmp_path, model_type, extra, want):
    b = block.of(models.load("hf:" + save(model_type, "causal", tmp_path, **extra)))
    assert {k: getattr(b, k) for k in want} == want


def test_the_built_in_decoders_blocks():
    assert block.of(models.load("tiny")).positions == "learned"
    assert block.of(models.load("gpt")).positions == "rotary"


def test_a_prompt_keeps_the_start_token_and_drops_the_appended_end_token(tmp_path):
    """The tiny tokenizer writes '<s> The cat </s>': the next token was predicted after '</s>'."""
    dec = models.load("hf:" + save("qwen3", "causal", tmp_path))
    ids, _ = dec.encode("The cat")
    assert dec.tokenizer.convert_ids_to_tokens(ids[0].tolist()) == ["<s>", *"The cat"]
    assert dec.tokenizer("The cat")["input_ids"][-1] == dec.eos  # the tokenizer itself still appends it
    assert torch.equal(ids, dec.encode("The cat", room=4)[0])


def test_a_decoder_whose_class_takes_no_cache_writes_without_one_and_the_cache_view_says_so(tmp_path):
    """GPT-1 (OpenAIGPTLMHeadModel) has no past_key_values: its forward swallowed the cache unread, so every cached
    step after the first computed the new token without the text before it (logits off by 0.29 on this tiny model).
    It writes by reading the whole text again instead; the KV cache section refuses it in one sentence."""
    from limits.errors import UserError

    dec = models.load("hf:" + save("openai-gpt", "causal", tmp_path))
    assert not dec.takes_cache and models.load("gpt").takes_cache
    ids, _ = dec.encode("def attention(q, k, v):")
    cached = [step.logits for step in dec.steps(ids, 4, use_cache=True)]
    with torch.no_grad():
        for step, logits in enumerate(cached):  # the model's own logits over the whole text so far, each step
            own = dec.model(input_ids=ids).logits[:, -1]                       # (1, V)
            torch.testing.assert_close(logits, own, rtol=0, atol=1e-5, msg=f"step {step}")
            ids = torch.cat([ids, own.argmax(-1, keepdim=True)], dim=1)
    with pytest.raises(UserError, match=r"\(OpenAIGPTLMHeadModel\) takes no KV cache"):
        E.write(dec, "def attention(q, k, v):", 4)
