"""One folder is one model: the views that judge a classifier (Attribution, Pruning your own model) get the very
modules models.load kept for every other view, not a second copy loaded beside them."""
from bench.tiny_any import save
from ui.runtime import cache


def test_a_classifier_folder_is_loaded_once_for_every_view(tmp_path):
    folder = save("bert", "classifier", tmp_path, num_labels=2)
    shown = cache.model("hf:" + folder, "cpu", "float32")
    judged = cache.task_model(folder, "cpu", "float32")
    assert judged.model is shown.task and judged.model.base_model is shown.model
    assert judged.head == "sequence classification" and len(judged.labels) == 2


def test_a_masked_lm_folder_is_loaded_once_too(tmp_path):
    folder = save("bert", "masked", tmp_path)
    judged = cache.task_model(folder, "cpu", "float32")
    assert judged.head == "masked LM" and judged.model is cache.model("hf:" + folder, "cpu", "float32").mlm


def test_a_question_answering_head_is_kept_too_and_predicts_no_class(tmp_path):
    """A question-answering head: models.load keeps it (the task model is the very module), and the model predicts no
    class, as a span is none of the contract's predictions."""
    import torch
    from transformers import BertConfig, BertForQuestionAnswering

    from bench.tiny_any import VOCAB, tokenizer

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=37, max_position_embeddings=64)
    BertForQuestionAnswering(cfg).save_pretrained(tmp_path)
    tokenizer().save_pretrained(tmp_path)
    shown = cache.model("hf:" + str(tmp_path), "cpu", "float32")
    judged = cache.task_model(str(tmp_path), "cpu", "float32")
    assert shown.predicts is None and shown.task_head == judged.head == "question answering"
    assert judged.model is shown.task and judged.model.base_model is shown.model
    assert "with its question answering head" in shown.label
    from experiments.explained import explain  # Attribution explains its encoder, and says the head is not

    assert "this folder's question answering head is not explained here" in explain(shown, "the cat sat down").what


def test_a_decoder_folder_is_judged_by_its_language_model_head_once(tmp_path):
    folder = save("llama", "causal", tmp_path)
    judged = cache.task_model(folder, "cpu", "float32")
    assert judged.head == "causal LM" and judged.model is cache.model("hf:" + folder, "cpu", "float32").model


def test_a_decoder_classifier_is_kept_and_judged_once_and_its_tokenizer_is_left_as_it_is(tmp_path):
    """A GPT-2 classifier: models.load keeps it (the model predicts a class), the task model is the very module, and
    padding with the end token (its tokenizer has no padding token) is set on the task model's copy, never on the
    tokenizer every other view and session shares."""
    from bench.tiny_any import build, tokenizer

    build("gpt2", "classifier", num_labels=3).save_pretrained(tmp_path)
    tok = tokenizer()
    tok.pad_token = None
    tok.save_pretrained(tmp_path)
    shown = cache.model("hf:" + str(tmp_path), "cpu", "float32")
    judged = cache.task_model(str(tmp_path), "cpu", "float32")
    assert shown.predicts == "class" and "with its sequence classification head" in shown.label
    assert judged.model is shown.task and judged.model.base_model is shown.model and len(judged.labels) == 3
    assert shown.tokenizer.pad_token is None and judged.tokenizer.pad_token == judged.tokenizer.eos_token
    assert cache.task_model(str(tmp_path), "cpu", "float32").tokenizer is judged.tokenizer  # copied once, not per run
    import pytest

    from experiments.patching import Runner
    from limits.errors import UserError

    with pytest.raises(UserError, match="this decoder's classifier is neither"):  # not "no language-model head"
        Runner(shown)


def test_a_head_kept_for_no_model_of_its_family_is_refused_with_its_sentence(tmp_path):
    import pytest

    from limits.errors import UserError

    folder = save("bart", "classifier", tmp_path)
    with pytest.raises(UserError, match="BartForSequenceClassification's sequence classification head is not one this "
                                        "app keeps for an encoder-decoder"):
        cache.task_model(folder, "cpu", "float32")


def test_a_head_whose_weights_are_not_all_there_is_refused_not_filled_at_random(tmp_path):
    import pytest
    from safetensors.torch import load_file, save_file

    from limits.errors import UserError

    folder = save("bert", "classifier", tmp_path, num_labels=2)
    state = load_file(f"{folder}/model.safetensors")
    save_file({k: v for k, v in state.items() if k != "classifier.weight"}, f"{folder}/model.safetensors",
              metadata={"format": "pt"})
    with pytest.raises(UserError, match=r"do not hold all of BertForSequenceClassification's head \(1 tensors"):
        cache.model("hf:" + folder, "cpu", "float32")


def test_a_bert_style_causal_lm_keeps_its_head_and_its_heads_are_causal(tmp_path):
    """BertLMHeadModel (is_decoder): kept as a causal LM, and Inside a head's steps on it are the model's own causal
    weights (a key after its query gets none)."""
    import numpy as np
    import torch
    from transformers import BertConfig, BertLMHeadModel

    from analysis.inside_head import steps
    from bench.tiny_any import VOCAB, tokenizer

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=37, max_position_embeddings=64, is_decoder=True)
    BertLMHeadModel(cfg).save_pretrained(tmp_path)
    tokenizer().save_pretrained(tmp_path)
    shown = cache.model("hf:" + str(tmp_path), "cpu", "float32")
    judged = cache.task_model(str(tmp_path), "cpu", "float32")
    assert judged.head == "causal LM" and judged.model is shown.task and shown.predicts is None
    from models.residual import why_not

    assert shown.attend("the cat sat on the mat").kind == "causal"   # Heads says causal attention, as it is
    assert "BERT-style causal LM" in why_not(shown) and "predicts no next token" not in why_not(shown)
    d = shown.head_qkv("the cat sat on the mat", 1, 2)
    assert d.causal and np.triu(d.model_weights, 1).max() == 0
    np.testing.assert_allclose(steps(d.x, d.q, d.k, d.v, d.scale, d.causal)["softmax"], d.model_weights, atol=1e-5)
