"""Architectures transformers builds whose attention the app cannot draw are refused by models.load in one sentence
the user can act on (limits.errors.UserError), decided from config fields (models.layout.refusal), and
models.supported() shows the same sentence in every view's column: a hybrid none of whose layers attends (a
Qwen3-Next of linear-attention layers alone; a hybrid with some is shown by those, tests/models/test_hybrid.py) or
that keeps its recurrent state on its modules (RecurrentGemma: a shared model would mix visitors' texts), local
windows (Longformer, LED, LongT5), global tokens
(Pegasus-X), pooling between blocks (Funnel), no softmax weights (YOSO, MRA), a recurrence (RWKV), latents (Perceiver),
chunks and hashed buckets (Reformer), n-gram streams (ProphetNet), a byte model's three stacks (BLT), BigBird's
block-sparse attention, an X-MOD whose
config names none of its several languages. An X-MOD with one language adapter runs in it.

Tiny random models from bench.tiny_any's builder, never downloaded weights."""
import re

import numpy as np
import pytest
import torch

import models
from bench.tiny_any import model_class, save
from limits.errors import UserError

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

# (model_type, kind, words its sentence must hold, extra config)
REFUSED = [
    ("qwen3_next", "causal", "has no layer that attends (its layers are linear_attention)",
     {"layer_types": ["linear_attention", "linear_attention"]}),
    ("recurrent_gemma", "causal", "keeps its recurrent layers' state on its own modules", {}),
    ("longformer", "masked", "local windows", {}),
    ("funnel", "masked", "pools its sequence", {}),
    ("yoso", "masked", "without computing its weights", {}),
    ("rwkv", "causal", "recurrence in every layer", {}),
    pytest.param("perceiver", "masked", "latent vectors", {}, marks=pytest.mark.slow),  # ~12 s to build
    ("reformer", "causal", "buckets of hashed", {}),
    ("prophetnet", "seq2seq", "n-gram streams", {}),
    ("pegasus_x", "seq2seq", "global tokens", {}),
    ("xmod", "masked", '"default_language": "en_XX"', {"languages": ["en_XX", "de_DE"]}),
]


def one_sentence(text: str) -> bool:
    """One sentence: ends with a full stop, no full stop followed by a new capitalised sentence inside."""
    return text.endswith(".") and re.search(r"[.!?]\s+[A-Z]", text[:-1]) is None


@pytest.mark.parametrize(("model_type", "kind", "words", "extra"), REFUSED)
def test_load_refuses_in_one_sentence(model_type, kind, words, extra, tmp_path):
    folder = save(model_type, kind, tmp_path / "m", **extra)
    with pytest.raises(UserError) as refused:
        models.load(f"hf:{folder}")
    said = str(refused.value)
    assert said.startswith(f"'m' ({model_type}) ") and words in said and one_sentence(said), said
    assert "Traceback" not in said and ":" in said  # what it is, then what to do


def test_a_byte_model_of_three_stacks_is_refused_from_its_config(tmp_path):
    """BLT reads bytes through a local encoder, a global transformer and a local decoder; its load had raised an
    AttributeError. Its config alone is saved (its default sizes would take gigabytes): the refusal comes first."""
    from bench.tiny_any import config

    config("blt").save_pretrained(tmp_path / "m")
    with pytest.raises(UserError) as refused:
        models.load(f"hf:{tmp_path / 'm'}")
    said = str(refused.value)
    assert said.startswith("'m' (blt) reads bytes") and "a global transformer over patches of bytes" in said
    assert one_sentence(said), said


def test_supported_shows_each_refusal_in_every_views_column():
    table = models.supported()
    for model_type in ("bamba", "recurrent_gemma", "longformer", "led", "longt5", "funnel",  # Bamba's: mamba alone
                       "yoso", "mra", "pegasus_x", "big_bird", "rwkv", "perceiver",
                       "reformer", "prophetnet", "blt"):
        row = table.loc[model_type, ["heads", "inside_head", "next_token"]]
        assert (row == row["heads"]).all() and row["heads"].startswith("This architecture "), model_type
        assert one_sentence(row["heads"]), row["heads"]
    # every layer attends (Falcon-H1's mamba runs beside attention in each layer), or one language adapter
    assert (table.loc[["llama", "falcon_h1", "gemma2", "xmod"], "heads"] == "yes").all()


def test_hybrid_layers_are_read_from_the_config():
    from transformers import CONFIG_MAPPING

    from models import layout

    assert layout.without_attention(CONFIG_MAPPING["jamba"]()) == ["mamba", "linear_attention"]
    assert layout.attending(CONFIG_MAPPING["jamba"]()) == list(range(4, 32, 8))  # every 8th from layer 4
    assert layout.not_attending(CONFIG_MAPPING["jamba"]()) == ["mamba"]
    linear = CONFIG_MAPPING["qwen3_next"](num_hidden_layers=2, layer_types=["linear_attention"] * 2)
    assert layout.attending(linear) == [] and "has no layer that attends" in layout.refusal(linear)
    assert layout.attending(CONFIG_MAPPING["gemma2"]()) is None
    assert layout.without_attention(CONFIG_MAPPING["gemma2"]()) == []  # sliding and full attention
    assert layout.without_attention(CONFIG_MAPPING["falcon_h1"]()) == []  # attention in every ("hybrid") layer
    assert layout.refusal(CONFIG_MAPPING["llama"]()) is None


def test_an_xmod_with_one_language_runs_in_it(tmp_path):
    """Its config names no default language; the app runs it in its one adapter's, and attention equals the
    model's own eager output_attentions with that language set."""
    from transformers import AutoTokenizer

    folder = save("xmod", "masked", tmp_path / "x", languages=["en_XX"])
    m = models.load(f"hf:{folder}")
    trace = m.attend("abcab")
    ref = model_class("xmod", "masked").from_pretrained(folder, attn_implementation="eager").eval()
    with pytest.raises(ValueError, match="Input language unknown"):  # what the app would have shown
        ref(**AutoTokenizer.from_pretrained(folder)("abcab", return_tensors="pt"))
    ref.set_default_language("en_XX")
    with torch.no_grad():
        out = ref(**AutoTokenizer.from_pretrained(folder)("abcab", return_tensors="pt"), output_attentions=True)
    want = torch.stack(out.attentions, 1)[0].numpy()  # (L, H, T, T)
    assert trace.weights.shape == want.shape and float(np.abs(trace.weights - want).max()) <= 1e-6
