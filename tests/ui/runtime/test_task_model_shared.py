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


def test_a_decoder_folder_is_judged_by_its_language_model_head_once(tmp_path):
    folder = save("llama", "causal", tmp_path)
    judged = cache.task_model(folder, "cpu", "float32")
    assert judged.head == "causal LM" and judged.model is cache.model("hf:" + folder, "cpu", "float32").model


def test_a_folder_without_a_head_is_refused_with_its_sentence(tmp_path):
    import pytest

    from limits.errors import UserError

    folder = save("gpt2", "classifier", tmp_path)  # a decoder keeps its language-model head only
    with pytest.raises(UserError, match="GPT2ForSequenceClassification's sequence classification head is kept for "
                                        "encoders"):
        cache.task_model(folder, "cpu", "float32")
