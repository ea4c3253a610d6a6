"""models.hf with a masked-LM head (loaded with it) and with an exported pruned folder (rebuilt pruned)."""
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, BertModel

import models
from experiments import masked_lm
from models.gates import head_counts
from models.hf import minilm_path
from models.prune import pruned_copy
from models.pruned_hf import export


def save_tiny_mlm(folder) -> BertForMaskedLM:
    """A random 2-layer, 4-head, hidden-32 BertForMaskedLM with MiniLM's tokenizer, saved as safetensors."""
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    cfg = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=128, attn_implementation="eager")
    torch.manual_seed(0)
    model = BertForMaskedLM(cfg).eval()
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return model


def test_mlm_head_is_loaded_and_scores_the_text(tmp_path):
    want = save_tiny_mlm(tmp_path)
    enc = models.load(f"hf:{tmp_path}")
    assert enc.mlm is not None and enc.model is enc.mlm.base_model and "masked-LM" in enc.label
    task = masked_lm.task(enc, "The cat sat on the mat.")
    batch, labels = task
    assert len(labels) == 7 and ((labels != -100).sum(1) == 1).all()  # 7 word pieces, each masked once
    assert (batch["input_ids"][labels != -100] == enc.tokenizer.mask_token_id).all()
    with torch.no_grad():
        logits = want(**batch).logits                                    # the model as built, not as loaded
    expected = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
    torch.testing.assert_close(masked_lm.loss(enc.mlm, task), expected)
    assert masked_lm.text_metric(enc, "The cat sat on the mat.")({}) == float(
        (logits.argmax(-1) == labels)[labels != -100].float().mean())


def test_long_text_masks_fifteen_percent_with_a_fixed_seed(tmp_path):
    save_tiny_mlm(tmp_path)
    enc = models.load(f"hf:{tmp_path}")
    text = " ".join(["word"] * 60)
    _, labels = masked_lm.task(enc, text)
    assert labels.shape[0] == 1 and int((labels != -100).sum()) == 9  # round(0.15 × 60)
    torch.testing.assert_close(masked_lm.task(enc, text)[1], labels)


def test_minilm_has_no_mlm_head():
    assert models.load("bert").mlm is None


def test_exported_pruned_folder_loads_through_hf(tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    cfg = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=128, attn_implementation="eager")
    torch.manual_seed(1)
    plan = {0: [1], 1: [0, 2]}
    pruned = pruned_copy(BertModel(cfg).eval(), plan)
    export(pruned, plan, str(tmp_path), tokenizer)
    enc = models.load(f"hf:{tmp_path}")
    assert head_counts(enc.model) == [3, 2] and "3 heads pruned" in enc.label
    x = dict(tokenizer(["Pruned heads stay pruned."], return_tensors="pt"))
    with torch.no_grad():
        torch.testing.assert_close(enc.model(**x).last_hidden_state, pruned(**x).last_hidden_state, rtol=0, atol=1e-6)
        want = pruned(**x, output_attentions=True).attentions
    trace = enc.attend("Pruned heads stay pruned.")
    assert trace.weights.shape[:2] == (2, 4) and any("3 heads were pruned" in n for n in trace.notices)
    assert (trace.weights[0, 1] == 0).all() and (trace.weights[1, [0, 2]] == 0).all()
    torch.testing.assert_close(torch.from_numpy(trace.weights[1, [1, 3]]), want[1][0])
