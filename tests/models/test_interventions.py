"""Head interventions on every family (models.gates over models.sites), against weight surgery done by hand.

Gating a head to 0 must equal zeroing that head's columns of the output projection in a copy of the model (what
slicing the head out leaves behind: the bias stays). The projection of every site is named here by its path in the
family's own module tree, written out per family, not found by models.sites. Patching a head with its own output
changes nothing; with another value (a mean over a corpus: mean ablation) it changes the output.
"""
import copy

import pytest
import torch
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForImageClassification,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
)

from models import gates
from models.sites import head_sites

TEXT = "Heads can be cut."
# family -> (Auto class, the output projection of each attention site in models.sites' order, with {l} the layer)
PATHS = {
    "bert": (AutoModel, ["encoder.layer.{l}.attention.output.dense"]),
    "roberta": (AutoModel, ["encoder.layer.{l}.attention.output.dense"]),
    "distilbert": (AutoModel, ["transformer.layer.{l}.attention.out_lin"]),
    "gpt2": (AutoModelForCausalLM, ["transformer.h.{l}.attn.c_proj"]),
    "llama": (AutoModelForCausalLM, ["model.layers.{l}.self_attn.o_proj"]),
    "qwen2": (AutoModelForCausalLM, ["model.layers.{l}.self_attn.o_proj"]),
    "gpt-neox": (AutoModelForCausalLM, ["gpt_neox.layers.{l}.attention.dense"]),
    "t5": (AutoModelForSeq2SeqLM, ["encoder.block.{l}.layer.0.SelfAttention.o",
                                   "decoder.block.{l}.layer.0.SelfAttention.o",
                                   "decoder.block.{l}.layer.1.EncDecAttention.o"]),
    "bart": (AutoModelForSeq2SeqLM, ["model.encoder.layers.{l}.self_attn.out_proj",
                                     "model.decoder.layers.{l}.self_attn.out_proj",
                                     "model.decoder.layers.{l}.encoder_attn.out_proj"]),
    "vit": (AutoModelForImageClassification, ["vit.layers.{l}.attention.o_proj"]),
    "t5gemma": (AutoModelForSeq2SeqLM, ["model.encoder.layers.{l}.self_attn.o_proj",  # its cross-attention is
                                        "model.decoder.layers.{l}.self_attn.o_proj",  # named cross_attn
                                        "model.decoder.layers.{l}.cross_attn.o_proj"]),
}
BUILT = {"t5gemma"}  # made by bench.tiny_any (its sub-configs sized there), not bench.tiny_families
LAYERS, HEADS, HS = 2, 4, 8  # bench.tiny_families: 2 layers, 4 heads, d_model 32


pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py


def _load(name, folder):
    auto, paths = PATHS[name]
    model = auto.from_pretrained(folder, attn_implementation="eager").eval()
    if name == "vit":
        inputs = {"pixel_values": torch.rand(1, 1, 8, 8, generator=torch.Generator().manual_seed(0))}
    else:
        inputs = dict(AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt"))
        if auto is AutoModelForSeq2SeqLM:
            start = getattr(model.config, "decoder_start_token_id", None) or 1  # T5Gemma's config has none
            inputs["decoder_input_ids"] = torch.tensor([[start, 5, 9]])
    return model, inputs, [p.format(l=layer) for p in paths for layer in range(LAYERS)]


def _out(model, inputs) -> torch.Tensor:
    with torch.no_grad():
        return model(**inputs)[0]


def _zeroed(model, path: str, head: int):
    """A copy of the model with head `head`'s input columns of the projection at `path` set to 0."""
    clone = copy.deepcopy(model)
    proj = clone.get_submodule(path)
    cols = slice(head * HS, (head + 1) * HS)
    with torch.no_grad():
        if type(proj).__name__ == "Conv1D":  # GPT-2: weight (in, out)
            proj.weight[cols] = 0
        else:                                # nn.Linear: weight (out, in)
            proj.weight[:, cols] = 0
    return clone


@pytest.mark.parametrize("name", list(PATHS))
def test_gating_a_head_to_zero_equals_zeroing_its_columns_by_hand(name, tiny_folder, tmp_path):
    if name in BUILT:
        from bench.tiny_any import save

        folder = save(name, "seq2seq", tmp_path / name)
    else:
        folder = tiny_folder(name)
    model, inputs, paths = _load(name, folder)
    sites = head_sites(model)
    assert [s.proj for s in sites] == [model.get_submodule(p) for p in paths]
    assert gates.head_counts(model) == [HEADS] * len(paths)
    plain = _out(model, inputs)
    for i, path in enumerate(paths):
        head = (i + 1) % HEADS
        with gates.gated(model, gates.mask(gates.head_counts(model), {i: [head]})):
            cut = _out(model, inputs)
        expected = _out(_zeroed(model, path, head), inputs)
        assert torch.allclose(cut, expected, atol=1e-5), (name, path)
        assert not torch.equal(cut, plain), (name, path)  # the head mattered: the test can fail
    assert torch.equal(_out(model, inputs), plain)  # nothing stays on the model after the blocks


@pytest.mark.parametrize("name", ["gpt2", "llama", "t5"])
def test_patching_with_its_own_output_changes_nothing_and_with_a_mean_changes_the_output(name, tiny_folder):
    model, inputs, paths = _load(name, tiny_folder(name))
    plain = _out(model, inputs)
    with torch.no_grad(), gates.recorded(model) as kept:
        model(**inputs)
    site = len(paths) - 1
    own = {site: {h: kept["heads"][site][0, :, h] for h in range(HEADS)}}   # (T, hs) each
    with gates.patched(model, own):
        assert torch.allclose(_out(model, inputs), plain, atol=1e-6)
    mean = torch.randn(HS, generator=torch.Generator().manual_seed(site))    # a head's mean output, (hs,)
    with gates.patched(model, {site: {2: mean.expand(kept["heads"][site].shape[1], HS)}}):
        mean_out = _out(model, inputs)
    assert not torch.allclose(mean_out, plain, atol=1e-4)  # mean ablation is patching with the mean


def test_albert_and_wrong_gate_shapes_say_how_to_fix(tiny_folder):
    albert = AutoModel.from_pretrained(tiny_folder("albert"), attn_implementation="eager")
    with pytest.raises(ValueError, match="cover BERT-style encoders .* pick 'gpt', 'bert' or 'tiny'"):
        head_sites(albert)
    gpt2, _, _ = _load("gpt2", tiny_folder("gpt2"))
    with pytest.raises(ValueError, match=r"one value per head: the model has \[4, 4\] heads per layer"):
        with gates.gated(gpt2, [torch.ones(3), torch.ones(4)]):
            pass
    with pytest.raises(ValueError, match="layer 5 does not exist; the model has 2 attention layers"):
        with gates.patched(gpt2, {5: {0: torch.zeros(HS)}}):
            pass
