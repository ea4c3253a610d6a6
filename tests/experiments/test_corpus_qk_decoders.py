"""The corpus view's queries and keys for decoders: Q and K after RoPE, equal to the rotated Q and K that transformers
itself hands to its attention (captured through its attention interface, on a copy loaded apart) and to what the
Inside-a-head view shows; a model it cannot recompute gets one true sentence."""
import numpy as np
import pytest
import torch
from transformers import AttentionInterface, AutoModelForCausalLM
from transformers.integrations.sdpa_attention import sdpa_attention_forward

import models
from data import corpus
from experiments.corpus import qk_points

SENTENCES = corpus.builtin(50).sentences[:6]
CAPTURED: list[tuple[torch.Tensor, torch.Tensor]] = []


def _capture(module, query, key, value, attention_mask, **kwargs):
    """transformers' own attention, after keeping the query and key it was given (B, H, T, hd), (B, H_kv, T, hd)."""
    CAPTURED.append((query.detach().clone(), key.detach().clone()))
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


AttentionInterface.register("capture_qk", _capture)


def _own_qk(folder: str, sentence: str, layer: int, kv_head_of: list[int], ids: torch.Tensor) -> tuple:
    """The query and key the model's own layer `layer` attends with: (T, H, hd) each, keys per query head."""
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="capture_qk").eval()
    CAPTURED.clear()
    with torch.no_grad():
        model(input_ids=ids)
    q, k = CAPTURED[layer]
    return q[0].transpose(0, 1).numpy(), k[0, kv_head_of].transpose(0, 1).numpy()


@pytest.mark.parametrize("name", ["llama", "qwen2", "gpt2"])
def test_decoder_queries_and_keys_are_the_models_own_after_rotation(name, tiny_folder):
    folder = tiny_folder(name)
    m = models.load(f"hf:{folder}")
    layer = 1
    pts = qk_points(m, SENTENCES, layer, max_tokens=400)
    rows = sorted(set(pts["row"].tolist()))
    assert len(rows) >= 2 and pts["q"].shape[1:] == (m.n_heads, m.head_dim) == pts["k"].shape[1:]
    for row in rows[:2]:
        at = pts["row"] == row
        assert pts["pos"][at].tolist() == list(range(at.sum()))
        ids, _ = m.encode(SENTENCES[row])
        q, k = _own_qk(folder, SENTENCES[row], layer, m.kv_head_of, ids)
        np.testing.assert_allclose(pts["q"][at], q, atol=1e-5)
        np.testing.assert_allclose(pts["k"][at], k, atol=1e-5)
        for head in range(m.n_heads):  # the same numbers the Inside-a-head view shows for each head
            d = m.head_qkv(SENTENCES[row], layer, head)
            np.testing.assert_allclose(pts["q"][at][:, head], d.q, atol=1e-6)
            np.testing.assert_allclose(pts["k"][at][:, head], d.k, atol=1e-6)
            assert pts["tokens"][np.flatnonzero(at)[0]:np.flatnonzero(at)[-1] + 1] == d.tokens


def test_rotation_moves_keys_with_their_position(tiny_folder):
    """A token's key depends on where it stands under RoPE: the same word at two positions gets two keys."""
    m = models.load("hf:" + tiny_folder("llama"))
    pts = qk_points(m, ("aaaa",), 0, max_tokens=50)
    a = [i for i, t in enumerate(pts["tokens"]) if t == "a"]
    assert len(a) == 4 and not np.allclose(pts["k"][a[0]], pts["k"][a[1]], atol=1e-4)


@pytest.mark.parametrize("name", ["distilbert", "gpt-neox"])
def test_a_layout_it_cannot_recompute_gets_a_true_sentence(name, tiny_folder):
    m = models.load("hf:" + tiny_folder(name))
    with pytest.raises(ValueError) as err:
        qk_points(m, SENTENCES, 0, 100)
    said = str(err.value)
    assert f"this {name.replace('-', '_')} model lays its heads out otherwise" in said
    assert "hf:<" not in said and "pick 'bert' or 'gpt' in the sidebar" in said
