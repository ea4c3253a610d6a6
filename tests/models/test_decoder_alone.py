"""A decoder saved alone from an encoder-decoder family (BartForCausalLM, MBartForCausalLM, PegasusForCausalLM; its
config says is_encoder_decoder false) loads as the causal LM it is: no encoder made up of random weights, its next
token predicted, its attention the model's own eager output_attentions, and (a pre-norm one) its logit split exactly."""
import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import models
from bench.tiny_any import save
from experiments.logit_lens import decompose

TEXT = "The cat sat on"


@pytest.mark.parametrize("family", ["bart", "mbart", "pegasus"])
def test_a_decoder_alone_loads_as_a_causal_lm(family, tmp_path):
    folder = save(family, "causal", tmp_path)
    m = models.load("hf:" + folder)
    assert m.family == "decoder" and m.predicts == "next token"
    assert type(m.model).__name__.endswith("ForCausalLM") and not hasattr(m.model, "encoder")
    trace = m.attend(TEXT)
    ref = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    ids = AutoTokenizer.from_pretrained(folder)(TEXT)["input_ids"]
    ids = ids[:len(trace.tokens)]  # the tokenizer's own encoding, less what it appends after the text
    with torch.no_grad():
        out = ref(input_ids=torch.tensor([ids]), output_attentions=True)
    np.testing.assert_allclose(trace.weights, torch.stack([a[0] for a in out.attentions]).numpy(), atol=1e-6)
    if family != "bart":  # pre-norm: the split is exact (BART's post-norm decoder is refused, test_residual_any_family)
        d = decompose(m, TEXT)
        assert abs(d.total - float(out.logits[0, -1, d.target_id])) < 1e-4
