"""Two models joined as one encoder-decoder (transformers' EncoderDecoderModel: bert2bert, as its docs build it), loaded
as a user's folder is: its three attentions equal the model's own eager output_attentions (tests/models/
test_any_family.py), models.sites finds its encoder's self-attention and its decoder's self- and cross-attention, a
head gated to 0 equals a reference written here with a forward pre-hook on the transformers module loaded apart, and
patching reads the logit difference of the first token it writes."""
import copy

import pytest
import torch
from transformers import AutoTokenizer, EncoderDecoderModel

import models
from bench.tiny_any import save
from experiments.patching import patch_heads
from models import gates
from models.sites import head_sites

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

TEXT, CORRUPT = "abcab", "abdab"


@pytest.fixture(scope="module")
def joined(tmp_path_factory):
    folder = save("encoder-decoder", "seq2seq", tmp_path_factory.mktemp("bert2bert"))
    return folder, models.load("hf:" + folder)


def test_it_loads_as_an_encoder_decoder_named_for_its_two_models(joined):
    _, m = joined
    assert m.family == "encoder-decoder" and m.predicts == "target token"
    assert "(bert2bert encoder-decoder, 2 + 2 layers × 4 heads)" in m.label
    assert m.eos == 2 and m.start == 1  # the config's end and start tokens, which it keeps at the top level


def test_its_head_sites_are_the_encoders_then_the_decoders_self_and_cross_attention(joined):
    _, m = joined
    assert [s.name for s in head_sites(m.model)] == ["encoder 0", "encoder 1", "decoder 0 self", "decoder 1 self",
                                                     "decoder 0 cross", "decoder 1 cross"]
    assert gates.head_counts(m.model) == [4] * 6


@pytest.mark.parametrize(("site", "path"), [(0, "encoder.encoder.layer.0.attention.output.dense"),
                                            (3, "decoder.bert.encoder.layer.1.attention.output.dense"),
                                            (5, "decoder.bert.encoder.layer.1.crossattention.output.dense")])
def test_one_head_gated_to_zero_equals_a_hook_on_the_model_loaded_apart(joined, site, path):
    folder, m = joined
    tok = AutoTokenizer.from_pretrained(folder)
    enc = tok(TEXT, return_tensors="pt")
    fed = torch.tensor([[m.start, *tok("ab", add_special_tokens=False)["input_ids"]]])
    g = torch.ones(6, 4)
    g[site, 2] = 0.0
    with torch.no_grad(), gates.gated(m.model, g):
        got = m.model(**enc, decoder_input_ids=fed).logits

    ref = copy.deepcopy(EncoderDecoderModel.from_pretrained(folder, attn_implementation="eager").eval())

    def zero_head(module, args):
        x = args[0].clone()                                  # (B, T, H*hs): the heads side by side
        x[..., 2 * 8:3 * 8] = 0.0                            # head 2 of 4, 8 wide
        return (x,)

    ref.get_submodule(path).register_forward_pre_hook(zero_head)
    with torch.no_grad():
        want = ref(**enc, decoder_input_ids=fed).logits
    assert float((got - want).abs().max()) <= 1e-6
    with torch.no_grad():
        plain = m.model(**enc, decoder_input_ids=fed).logits
    assert float((plain - want).abs().max()) > 1e-5  # the head mattered (random weights: by little): it can fail


def test_patching_reads_the_first_token_it_writes(joined):
    folder, m = joined
    p = patch_heads(m, TEXT, CORRUPT, "c", "d")
    tok = AutoTokenizer.from_pretrained(folder)
    ref = EncoderDecoderModel.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        logits = ref(**tok(TEXT, return_tensors="pt"), decoder_input_ids=torch.tensor([[m.start]])).logits[0, -1]
    c, d = tok.convert_tokens_to_ids("c"), tok.convert_tokens_to_ids("d")
    assert p.clean_diff == pytest.approx(float(logits[c] - logits[d]), abs=1e-5)
    assert p.scores.shape == (6, 4) and p.rows[-1] == "decoder 1 cross"
