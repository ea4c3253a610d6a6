"""A decoder whose config sets no position limit of its own (XLNet's max_position_embeddings is -1) reads as many
tokens as its tokenizer allows, where it was refused with "This decoder holds -1 positions"; its attention equals the
model's own eager output_attentions."""
import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

import models
from bench.tiny_any import model_class, save

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py


def test_xlnet_reads_up_to_its_tokenizers_length(tmp_path):
    folder = save("xlnet", "causal", tmp_path / "x")
    m = models.load(f"hf:{folder}")
    assert m.config.max_position_embeddings == -1 and m.max_tokens == 64  # the tokenizer's model_max_length
    trace = m.attend("abcab")
    ref = model_class("xlnet", "causal").from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        tok = AutoTokenizer.from_pretrained(folder)
        ids = tok("abcab")["input_ids"]
        while ids[-1] in tok.all_special_ids:  # a decoder reads the text, not the <sep> <cls> XLNet's tokenizer appends
            ids.pop()
        out = ref(input_ids=torch.tensor([ids]), output_attentions=True)
    want = torch.stack(out.attentions, 1)[0].numpy()  # (L, H, T, T)
    assert trace.weights.shape == want.shape and float(np.abs(trace.weights - want).max()) <= 1e-6
