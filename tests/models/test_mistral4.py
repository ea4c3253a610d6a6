"""Mistral 4, a decoder of text that transformers' causal-LM mapping leaves out (only its image-text-to-text mapping
names Mistral4ForCausalLM, the language model Mistral 3's checkpoints hold): read as the decoder it is, alone or inside
Mistral 3, never refused as a model of images. Its attention equals eager output_attentions, its direct logit
attribution sums to its logit, one head patched equals a hook on its output projection, and its pruned export reloads
with transformers alone through AutoModelForCausalLM, which the stock model does not map."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import transformers

import models
from bench.tiny_any import config, save, tokenizer
from experiments import logit_lens
from models.hf.families import auto_family, causal_lm_class

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

TEXT = "abcab"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> str:
    return save("mistral4", "causal", tmp_path_factory.mktemp("mistral4") / "m")


@pytest.fixture(scope="module")
def mistral3(tmp_path_factory) -> str:
    """A Mistral 3 (a vision tower and a Mistral 4 language model), saved whole as its checkpoints are."""
    folder = tmp_path_factory.mktemp("mistral3")
    vision = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=4, image_size=28,
                  patch_size=14, head_dim=8)
    cfg = transformers.Mistral3Config(text_config=config("mistral4").to_dict(), vision_config=vision,
                                      image_token_index=5)
    torch.manual_seed(0)
    transformers.Mistral3ForConditionalGeneration(cfg).save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    return str(folder)


def _eager(folder: str, ids: torch.Tensor):
    ref = transformers.Mistral4ForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        return ref(input_ids=ids, output_attentions=True)


def test_it_is_a_decoder_though_only_an_image_text_mapping_names_it():
    from transformers.models.auto import modeling_auto

    assert "mistral4" not in modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES  # else this file tests nothing
    assert auto_family("mistral4") == "decoder" and causal_lm_class("mistral4") == "Mistral4ForCausalLM"
    assert auto_family("udop") is None and auto_family("whisper") is None  # image and speech models stay refused
    assert auto_family("fuyu") is None  # FuyuForCausalLM reads images too: its text_config is what is read


def test_its_attention_and_logits_are_the_models_own(folder):
    m = models.load("hf:" + folder)
    assert m.predicts == "next token" and "(mistral4 decoder, 2 layers × 4 heads)" in m.label
    ids, _ = m.encode(TEXT)
    out = _eager(folder, ids)
    assert float(np.abs(m.attend(TEXT).weights - torch.stack(out.attentions, 1)[0].numpy()).max()) <= 1e-6
    d = logit_lens.decompose(m, TEXT)
    own = float(out.logits[0, -1, d.target_id])
    assert abs(sum(d.parts.values()) - own) <= 1e-4 and abs(own) > 1e-3


def test_one_head_patched_equals_a_hook_on_its_output_projection(folder):
    """Head 1 of layer 0 patched from the clean text into the corrupted one: the corrupted run with that head's slice
    of o_proj's input replaced by the clean run's, written here with hooks on transformers' own model."""
    from experiments.patching import patch_heads

    clean, corrupt, answer, wrong = "abcab", "abcbb", "c", "b"
    m = models.load("hf:" + folder)
    p = patch_heads(m, clean, corrupt, answer, wrong)
    ref = transformers.Mistral4ForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    proj, width = ref.model.layers[0].self_attn.o_proj, ref.config.v_head_dim
    ia, iw = (m.tokenizer.convert_tokens_to_ids(t) for t in (answer, wrong))
    seen = {}

    def diff(text: str, hook) -> float:
        h = proj.register_forward_pre_hook(hook)
        with torch.no_grad():
            logits = ref(input_ids=m.encode(text)[0]).logits[0, -1]
        h.remove()
        return float(logits[ia] - logits[iw])

    def keep(mod, args):
        seen["z"] = args[0].clone()                                      # (1, T, H · d_v) clean

    def swap(mod, args):
        z = args[0].clone()
        z[..., width:2 * width] = seen["z"][..., width:2 * width]         # head 1's slice
        return (z,)

    clean_diff, corrupt_diff = diff(clean, keep), diff(corrupt, lambda *_: None)
    assert abs(clean_diff - p.clean_diff) <= 1e-5 and abs(corrupt_diff - p.corrupt_diff) <= 1e-5
    want = (diff(corrupt, swap) - corrupt_diff) / (clean_diff - corrupt_diff)
    assert abs(float(p.scores[0, 1]) - want) <= 1e-4 and abs(want) > 1e-3


def test_inside_mistral_3_its_language_model_is_read_alone(mistral3):
    m = models.load(f"hf:{mistral3}")
    assert "(mistral4 decoder" in m.label and any("(mistral3) reads text and other inputs" in n for n in m.notices)
    whole = transformers.Mistral3ForConditionalGeneration.from_pretrained(mistral3, attn_implementation="eager").eval()
    ids, _ = m.encode(TEXT)
    with torch.no_grad():
        want = whole(input_ids=ids, output_attentions=True)
        assert float((m.next_token_model(input_ids=ids).logits - want.logits).abs().max()) <= 1e-5
    assert float(np.abs(m.attend(TEXT).weights - torch.stack(want.attentions, 1)[0].numpy()).max()) <= 1e-6


@pytest.mark.parametrize("page", ["kv_cache", "circuits"])
def test_inside_mistral_3_every_view_says_its_vision_parts_are_not_loaded(mistral3, page):
    """Heads, Next token and Patching said it; the KV cache and Circuits showed the label alone."""
    from tests.views.view_at import open_linked

    at = open_linked(page, state={"model": "hf:", "hf_spec": mistral3})
    assert not at.exception
    assert any("This model (mistral3) reads text and other inputs" in w.value for w in at.warning)


def test_inside_a_head_shows_its_own_scale(folder):
    """YaRN multiplies Mistral 4's scores by its attention factor, not 1/√d_k: the view said so and drew nothing."""
    from tests.views.view_at import open_linked

    at = open_linked("inside_head", state={"model": "hf:", "hf_spec": folder})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) >= 4                                  # the steps, drawn
    assert any("scales its scores by its own factor" in c.value for c in at.caption)
    assert any("equals the model's own attention weights" in s.value for s in at.success)


OUTSIDE = textwrap.dedent("""
    import json, sys
    import torch, transformers
    assert not any(m == "models" or m.startswith("models.") for m in sys.modules), "the project was imported"
    model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], trust_remote_code=True,
                                                              attn_implementation="eager").eval()
    with torch.no_grad():
        print(json.dumps(model(input_ids=torch.tensor(json.loads(sys.argv[2]))).logits.tolist()))
""")


@pytest.mark.slow  # a fresh Python that imports transformers (5 s)
def test_its_pruned_export_reloads_through_auto_model_for_causal_lm(folder, tmp_path):
    from models.gates import gated, head_counts, mask
    from models.prune import pruned_copy
    from models.pruned_hf import export

    m, plan = models.load("hf:" + folder), {0: [1], 1: [0, 3]}
    lm = m.next_token_model
    export(pruned_copy(lm, plan), plan, str(tmp_path / "pruned"), m.tokenizer)
    ids, _ = m.encode(TEXT)
    with torch.no_grad(), gated(lm, mask(head_counts(lm), plan)):
        want = lm(input_ids=ids).logits
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HF_HUB_OFFLINE": "1",
                                                                         "HF_HOME": str(tmp_path / "hf")}
    run = subprocess.run([sys.executable, "-I", "-c", OUTSIDE, str(tmp_path / "pruned"), json.dumps(ids.tolist())],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    got = torch.tensor(json.loads(run.stdout.strip().splitlines()[-1]))
    assert float((got - want).abs().max()) <= 1e-5
    readme = (tmp_path / "pruned" / "README.md").read_text()  # it said AutoModel and a feature-extraction pipeline
    assert "transformers.AutoModelForCausalLM.from_pretrained" in readme and '"text-generation"' in readme
