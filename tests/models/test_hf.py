"""The BERT encoder: shapes, normalisation, agreement with transformers' own attentions, pairs, bad input."""
import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

import models
from models.hf import minilm_path


@pytest.fixture(scope="module")
def bert():
    return models.load("bert")


def test_trace_shape_rows_and_special_tokens(bert):
    tr = bert.attend("The river bank was dirty")
    assert tr.weights.shape == (6, 12, len(tr.tokens), len(tr.tokens))
    assert tr.weights.dtype == np.float32
    np.testing.assert_allclose(tr.weights.sum(-1), 1.0, atol=1e-5)
    assert tr.tokens[0] == "[CLS]" and tr.tokens[-1] == "[SEP]"
    assert tr.kind == "self" and tr.key_tokens == tr.tokens and tr.output is None
    assert "6 layers × 12 heads" in bert.label and "MiniLM" in bert.label


def test_equals_transformers_output_attentions(bert):
    """An independent load and forward pass gives the same weights within 1e-6."""
    path = minilm_path()
    tok = AutoTokenizer.from_pretrained(path)
    ref = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    text = "Attention is all you need, they said."
    with torch.no_grad():
        att = ref(**tok(text, return_tensors="pt"), output_attentions=True).attentions
    expected = torch.stack(att, 1)[0].numpy()  # (L, H, T, T)
    got = bert.attend(text).weights
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() < 1e-6


def test_sentence_pair_has_token_type_ids(bert):
    enc, _ = bert.encode("I sat by the bank", "I paid at the bank")
    types = enc["token_type_ids"][0].tolist()
    ids = enc["input_ids"][0].tolist()
    sep = bert.tokenizer.sep_token_id
    first_sep = ids.index(sep)
    assert set(types[: first_sep + 1]) == {0} and set(types[first_sep + 1:]) == {1}
    tr = bert.attend("I sat by the bank", "I paid at the bank")
    assert tr.tokens.count("[SEP]") == 2 and len(tr.tokens) == len(ids)


def test_long_text_is_truncated_with_notice(bert):
    tr = bert.attend("word " * 600)
    assert tr.weights.shape[-1] == 512
    assert any("Truncated to 512 tokens (90 dropped)" in n for n in tr.notices)


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_text_is_refused_with_a_sentence(bert, text):
    with pytest.raises(ValueError, match="Type a sentence"):
        bert.attend(text)


def test_html_and_odd_unicode_are_plain_tokens(bert):
    tr = bert.attend("<script>alert(1)</script> café 🙂 \u200b東京")
    assert "<" in tr.tokens and "script" in tr.tokens
    np.testing.assert_allclose(tr.weights.sum(-1), 1.0, atol=1e-5)


def test_unknown_model_names_the_choices():
    with pytest.raises(ValueError, match="Unknown model 'nope'.*bert"):
        models.load("nope")


def test_hf_folder_loads_any_bert_like_encoder():
    enc = models.load("hf:" + minilm_path())
    assert enc.attend("hello world").weights.shape[:2] == (6, 12)
    assert "bert" in enc.label


def test_hf_hub_id_offline_is_one_clear_sentence(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ValueError, match="cannot be reached"):
        models.load("hf:someone/not-cached-model")


def test_hf_missing_folder_and_empty_spec():
    with pytest.raises(ValueError, match="folder or hub id"):
        models.load("hf:")


@pytest.mark.parametrize("spec", ["/no/such/folder", "./no-such-folder", "~/no-such-folder", "a/b/c"])
def test_a_path_that_is_no_folder_is_said_so_not_sent_to_the_hub(spec, monkeypatch):
    """A path can never be a hub id ('owner/name'): it was told the hub could not be reached, to connect to the
    network."""
    from models.hf import reach

    monkeypatch.setattr(reach, "_hub_reachable", lambda: pytest.fail("a path was sent to the hub"))
    with pytest.raises(ValueError, match=f"There is no folder '{spec}' on this machine: check the path"):
        models.load("hf:" + spec)
