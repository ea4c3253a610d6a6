"""The shipped built-ins (models/weights/<name>/) load with transformers' Auto classes offline and still
score what their training.json says, recomputed here through an independent path on a fixed subset."""
import json
import math

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import (
    AutoImageProcessor,
    AutoModelForCausalLM,
    AutoModelForImageClassification,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
)

from data import dates, digits
from train import gpt as train_gpt
from train import seq2seq_transformer as train_seq2seq_transformer
from train import vit as train_vit

WEIGHTS = train_gpt.WEIGHTS
GPTS = ["gpt", "gpt-sink", "gpt-nobos"]
VARIANT = {name: variant for variant, name in train_gpt.VARIANTS.items()}


def figures(name: str) -> dict:
    return json.loads((WEIGHTS / name / "training.json").read_text())


@pytest.fixture(scope="module", params=GPTS)
def gpt(request):
    folder = WEIGHTS / request.param
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", local_files_only=True)
    return request.param, model.eval(), AutoTokenizer.from_pretrained(folder, local_files_only=True)


def test_gpt_config_is_llama_with_grouped_query_attention(gpt):
    _name, model, tok = gpt
    cfg = model.config
    assert cfg.model_type == "llama" and type(model).__name__ == "LlamaForCausalLM"
    assert (cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.hidden_size) == (4, 4, 2, 128)
    assert cfg.max_position_embeddings == train_gpt.CONTEXT == 128
    attn = model.model.layers[0].self_attn
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    assert attn.q_proj.weight.shape == (4 * head_dim, 128)
    assert attn.k_proj.weight.shape == attn.v_proj.weight.shape == (2 * head_dim, 128)  # 2 K/V heads for 4 queries
    assert len(tok) == cfg.vocab_size == train_gpt.BPE_VOCAB + 4


def test_gpt_tokenizer_round_trips_and_puts_its_first_token(gpt):
    name, _model, tok = gpt
    text = 'The "if" statement selects one suite; naïve café → ok.\n    x = 1'
    ids = tok(text)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == text
    first = figures(name)["first_token"]
    assert tok.convert_ids_to_tokens(ids[0]) == first if first else ids[0] not in tok.all_special_ids
    assert sum(i in tok.all_special_ids for i in ids) == (1 if first else 0)


def test_gpt_attentions_are_causal_distributions(gpt):
    _name, model, tok = gpt
    enc = tok("Assignment statements are used to (re)bind names to values.", return_tensors="pt")
    with torch.no_grad():
        att = model(**enc, output_attentions=True).attentions
    T = enc["input_ids"].shape[1]
    assert len(att) == 4 and all(a.shape == (1, 4, T, T) for a in att)  # (B, query heads, T, T)
    stacked = torch.stack(att)                                          # (L, B, H, T, T)
    assert torch.allclose(stacked.sum(-1), torch.ones(()), atol=1e-5)
    assert stacked.triu(diagonal=1).abs().max() == 0


def test_gpt_heldout_figures_reproduce_on_a_subset(gpt):
    """Perplexity from HF's own loss and first-token mass from its own attentions, on the first held-out windows."""
    name, model, tok = gpt
    recorded = figures(name)["subset"]
    x = train_gpt.heldout_windows(tok, VARIANT[name])[:recorded["windows"]]  # (N, T)
    with torch.no_grad():
        out = model(input_ids=x, labels=train_gpt.labels(x, train_gpt.special_ids(tok)), output_attentions=True)
    assert math.exp(out.loss.item()) == pytest.approx(recorded["perplexity"], rel=1e-3)
    att = torch.stack(out.attentions, dim=1)                                      # (B, L, H, T, T)
    mass, late = att[..., 1:, 0].mean(dim=(0, 2, 3)), att[..., 64:, 0].mean(dim=(0, 2, 3))  # (L,)
    assert mass[-1].item() == pytest.approx(recorded["first_token_mass_last_layer"], abs=2e-4)
    assert mass.mean().item() == pytest.approx(recorded["first_token_mass_all_layers"], abs=2e-4)
    assert late[-1].item() == pytest.approx(recorded["late_first_token_mass_last_layer"], abs=2e-4)


def test_gpt_variants_share_one_vocabulary():
    vocabs = [AutoTokenizer.from_pretrained(WEIGHTS / name, local_files_only=True).get_vocab() for name in GPTS]
    assert vocabs[0] == vocabs[1] == vocabs[2]


@pytest.fixture(scope="module")
def vit():
    folder = WEIGHTS / "vit"
    model = AutoModelForImageClassification.from_pretrained(folder, attn_implementation="eager", local_files_only=True)
    return model.eval(), AutoImageProcessor.from_pretrained(folder, local_files_only=True)


def test_vit_processor_gives_what_training_gave(vit):
    _model, proc = vit
    images, _ = digits.load()
    pixels = proc(images[0][..., None], return_tensors="pt")["pixel_values"]  # (1, 1, 8, 8)
    expected = (torch.from_numpy(images[0]) / 16 - 0.5) / 0.5
    assert pixels.shape == (1, 1, 8, 8) and torch.allclose(pixels[0, 0], expected, atol=1e-6)


def test_vit_attentions_cover_cls_and_16_patches(vit):
    model, _proc = vit
    cfg = model.config
    assert (cfg.image_size, cfg.patch_size, cfg.num_channels, cfg.num_hidden_layers, cfg.num_attention_heads) == (
        8, 2, 1, 4, 4)
    with torch.no_grad():
        att = model(pixel_values=torch.zeros(2, 1, 8, 8), output_attentions=True).attentions
    assert len(att) == 4 and all(a.shape == (2, 4, 17, 17) for a in att)
    assert torch.allclose(torch.stack(att).sum(-1), torch.ones(()), atol=1e-5)


def test_vit_heldout_accuracy_reproduces_on_200_digits(vit):
    model, _proc = vit
    recorded = figures("vit")
    images, labels = digits.load()
    test = digits.split()[1][:recorded["subset"]["n"]]
    assert len(test) == 200
    pixels = (torch.from_numpy(images[test]) / 16 - 0.5) / 0.5                     # (200, 8, 8), as trained
    with torch.no_grad():
        predicted = model(pixel_values=pixels[:, None]).logits.argmax(-1).numpy()
    assert (predicted == labels[test]).mean() == recorded["subset"]["accuracy"]
    assert recorded["heldout"]["accuracy"] >= 0.97 and recorded["subset"]["accuracy"] >= 0.97


def test_vit_reads_a_photo_of_a_digit(vit):
    """Held-out digits drawn large, dark on white, as RGB: to_digit_image brings them back to the model."""
    model, proc = vit
    images, labels = digits.load()
    test = digits.split()[1][:40]
    photos = [Image.fromarray((255 - np.kron(images[i], np.ones((12, 12))) * 255 / 16).astype(np.uint8)).convert("RGB")
              for i in test]
    read = np.stack([digits.to_digit_image(p) for p in photos])
    assert train_vit.accuracy(model, proc, read, labels[test]) >= 0.9


@pytest.fixture(scope="module")
def dates_model():
    folder = WEIGHTS / "seq2seq-transformer"
    model = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager", local_files_only=True)
    return model.eval(), AutoTokenizer.from_pretrained(folder, local_files_only=True)


def test_dates_tokenizer_is_one_character_per_token(dates_model):
    _model, tok = dates_model
    for text in ["tuesday, the 3rd of march, 2026", "2026-03-03", "sept. 30 1999"]:
        ids = tok(text)["input_ids"]
        assert len(ids) == len(text) + 1 and tok.convert_ids_to_tokens(ids[-1]) == "</s>"
        assert tok.decode(ids, skip_special_tokens=True) == text
    assert tok.decode(tok("March 3RD")["input_ids"], skip_special_tokens=True) == "march 3rd"


def test_dates_attentions_have_the_three_kinds(dates_model):
    model, tok = dates_model
    enc = tok("3 march 2021", return_tensors="pt")                                     # S = 13 with </s>
    with torch.no_grad():
        out = model(**enc, decoder_input_ids=torch.tensor([[model.config.decoder_start_token_id, 5, 6]]),
                    output_attentions=True)
    assert type(model).__name__ == "MarianMTModel"
    assert all(a.shape == (1, 4, 13, 13) for a in out.encoder_attentions)
    assert all(a.shape == (1, 4, 3, 3) for a in out.decoder_attentions)
    assert all(a.shape == (1, 4, 3, 13) for a in out.cross_attentions)
    assert len(out.encoder_attentions) == len(out.decoder_attentions) == len(out.cross_attentions) == 2


def test_dates_heldout_exact_reproduces_on_100_dates(dates_model):
    """Greedy outputs checked against the rule-based reader of the same written dates."""
    model, tok = dates_model
    recorded = figures("seq2seq-transformer")
    written = [s for s, _ in train_seq2seq_transformer.heldout()[:recorded["subset"]["n"]]]
    with torch.no_grad():
        ids = model.generate(**tok(written, padding=True, return_tensors="pt"), num_beams=1, do_sample=False,
                             max_new_tokens=12)
    predicted = tok.batch_decode(ids, skip_special_tokens=True)
    assert np.mean([p == dates.parse(s) for p, s in zip(predicted, written)]) == recorded["subset"]["greedy_exact"]
    pairs = list(zip(written, map(dates.parse, written)))
    assert train_seq2seq_transformer.exact(model, tok, pairs, beams=4) == recorded["subset"]["beam_exact"]
    assert recorded["heldout"]["greedy_exact"] >= 0.99 and recorded["heldout"]["n"] == 1000


@pytest.mark.parametrize("script", [train_gpt, train_vit, train_seq2seq_transformer])
def test_a_training_script_never_replaces_a_folder_unasked(script, tmp_path):
    (tmp_path / "keep.txt").write_text("shipped")
    with pytest.raises(SystemExit, match="exists: pass --overwrite"):
        script.main(["--out", str(tmp_path), "--steps", "1"])
    assert (tmp_path / "keep.txt").read_text() == "shipped"
