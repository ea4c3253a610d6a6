"""A model of text and images or sound (Gemma 3, LLaVA, Voxtral) loaded from its own folder: models.load reads its
language model alone, from the folder's weights, as a decoder of text. Its attention and its next-token logits equal
the whole model's, loaded apart by transformers and run on the same text; weights that do not hold the language model
where transformers keeps it are refused in one sentence, never filled with random values."""
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer, Gemma3ForConditionalGeneration, LlavaConfig, LlavaForConditionalGeneration

import models
from bench.tiny_any import config, save, tokenizer
from limits.errors import UserError

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

TEXT = "abcab"


def _same_as_the_whole(folder: str, whole_class):
    m = models.load("hf:" + folder)
    whole = whole_class.from_pretrained(folder, attn_implementation="eager").eval()
    ids, _ = m.encode(TEXT)                                                        # (1, T) as a decoder reads it
    assert ids[0].tolist() == AutoTokenizer.from_pretrained(folder)(TEXT)["input_ids"][:-1]  # less the end mark
    with torch.no_grad():
        out = whole(input_ids=ids, output_attentions=True)
    want = torch.stack(out.attentions, 1)[0].numpy()                                # (L, H, T, T)
    assert float(np.abs(m.attend(TEXT).weights - want).max()) <= 1e-6
    with torch.no_grad():
        assert float((m.next_token_model(input_ids=ids).logits - out.logits).abs().max()) <= 1e-5
    return m


def test_gemma3_is_read_as_its_text_decoder_and_says_so(tmp_path):
    m = _same_as_the_whole(save("gemma3", "causal", tmp_path), Gemma3ForConditionalGeneration)
    assert m.family == "decoder" and m.predicts == "next token" and "(gemma3_text decoder, 2 layers" in m.label
    assert ("This model (gemma3) reads text and other inputs: its language model (gemma3_text) is shown, reading "
            "text alone; its vision parts are not loaded.") in m.notices
    assert not hasattr(m.config, "text_part_of")  # what it was read from is never saved with it


def test_a_classifier_around_it_is_refused_not_read_as_a_next_token_model(tmp_path):
    """Its head would be lost without a word: the language model alone predicts next tokens."""
    with pytest.raises(UserError, match="is a model of type gemma3, which this app does not show"):
        models.load("hf:" + save("gemma3", "classifier", tmp_path))


def test_llava_is_read_as_its_llama(tmp_path):
    vision = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=4, image_size=28,
                  patch_size=14)
    cfg = LlavaConfig(text_config=config("llama").to_dict(), vision_config=vision, image_token_index=5)
    torch.manual_seed(0)
    LlavaForConditionalGeneration(cfg).save_pretrained(tmp_path)
    tokenizer().save_pretrained(tmp_path)
    m = _same_as_the_whole(str(tmp_path), LlavaForConditionalGeneration)
    assert "(llama decoder" in m.label and any("(llava) reads text and other inputs" in n for n in m.notices)


def test_a_pruned_export_of_its_language_model_reloads_as_the_gated_model(tmp_path):
    """The language model was loaded under the whole model's weight names; its export is saved under its own (it was
    renamed back, and reloaded with random weights)."""
    from models.gates import gated, head_counts, mask
    from models.prune import pruned_copy
    from models.pruned_hf import export, load_pruned

    m = models.load("hf:" + save("gemma3", "causal", tmp_path / "whole"))
    lm, plan = m.next_token_model, {0: [1]}
    export(pruned_copy(lm, plan), plan, str(tmp_path / "pruned"), m.tokenizer)
    ids, _ = m.encode(TEXT)
    with torch.no_grad(), gated(lm, mask(head_counts(lm), plan)):
        want = lm(input_ids=ids).logits
    with torch.no_grad():
        reloaded = load_pruned(str(tmp_path / "pruned"), auto="AutoModelForCausalLM")
        got = reloaded(input_ids=ids).logits
    assert float((got - want).abs().max()) <= 1e-5
    assert "text_part_of" not in (tmp_path / "pruned" / "config.json").read_text()


def test_weights_without_the_language_model_where_transformers_keeps_it_are_refused(tmp_path):
    folder = save("gemma3", "causal", tmp_path)
    weights = load_file(f"{folder}/model.safetensors")
    save_file({k.replace("language_model", "lm"): v for k, v in weights.items()}, f"{folder}/model.safetensors",
              metadata={"format": "pt"})
    with pytest.raises(UserError, match="do not hold its language model where transformers keeps it"):
        models.load("hf:" + folder)


def test_the_table_reads_gemma3_as_its_text_decoder():
    table = models.supported()
    assert table.loc["gemma3", "kind"] == "decoder" and table.loc["gemma3", "heads"] == "yes"
    assert table.loc["gemma3", "next_token"] == table.loc["gemma3_text", "next_token"] == "yes"
