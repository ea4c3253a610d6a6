"""One load keeps a folder's task head (issue: a fine-tuned classifier loaded through models.load used to lose its
classifier): `predicts` says what the head predicts, and the kept classifier's logits are transformers' own for the
same folder, loaded independently. A config that names a head its weights do not hold gets no head (never a random
one)."""
import pytest
import torch
from safetensors.torch import load_file, save_file

import models
from bench.tiny_any import save

TEXT = "the river bank"


@pytest.mark.parametrize("model_type", ["bert", "roberta", "distilbert", "electra"])
def test_a_classifier_folder_keeps_its_head_and_its_logits_are_transformers_own(model_type, tmp_path):
    from transformers import AutoModelForSequenceClassification

    folder = save(model_type, "classifier", tmp_path, num_labels=3)
    m = models.load("hf:" + folder)
    assert m.predicts == "class" and m.task_head == "sequence classification"
    assert m.task.base_model is m.model  # one set of weights: attention and the class come from the same modules
    ids, _ = m.encode(TEXT)
    reference = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        ours, theirs = m.task(**ids).logits, reference(**ids).logits  # (1, 3)
        attn = reference(**ids, output_attentions=True).attentions
    assert ours.shape == (1, 3) and torch.equal(ours, theirs)
    trace = m.attend(TEXT)
    assert abs(trace.weights - torch.stack(attn)[:, 0].numpy()).max() < 1e-6


def test_a_masked_lm_folder_predicts_a_target_token_and_a_bare_encoder_nothing(tmp_path):
    assert models.load("hf:" + save("bert", "masked", tmp_path / "mlm")).predicts == "target token"
    bare = models.load("bert")
    assert bare.predicts is None and bare.task is None


def test_a_config_naming_a_classifier_its_weights_lack_gets_no_head(tmp_path):
    folder = save("bert", "classifier", tmp_path)
    weights = tmp_path / "model.safetensors"
    tensors = {k: v for k, v in load_file(weights).items() if not k.startswith("classifier.")}
    save_file(tensors, weights, metadata={"format": "pt"})
    m = models.load("hf:" + folder)
    assert m.predicts is None and m.task is None
