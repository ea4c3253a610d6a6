"""An encoder-decoder whose config names no decoder start token (PLBart's checkpoints, unlike T5's or BART's) starts
its decoder at its generation config's start, else its end-of-text token, instead of failing with an AttributeError;
its attention then equals the model's own eager output_attentions fed the same decoder input."""
import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

import models
from bench.tiny_any import model_class, save

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py


def test_a_plbart_without_a_decoder_start_starts_at_its_end_of_text(tmp_path):
    folder = save("plbart", "seq2seq", tmp_path / "p")
    m = models.load(f"hf:{folder}")
    assert getattr(m.config, "decoder_start_token_id", None) is None and m.start == m.eos == 2
    trace = m.attend("abcab", text_b="ab")
    tok = AutoTokenizer.from_pretrained(folder)
    ref = model_class("plbart", "seq2seq").from_pretrained(folder, attn_implementation="eager").eval()
    fed = torch.tensor([[m.start, *tok(text_target="ab", add_special_tokens=False)["input_ids"]]])
    with torch.no_grad():
        out = ref(**tok("abcab", return_tensors="pt"), decoder_input_ids=fed, output_attentions=True)
    want = torch.stack(out.cross_attentions, 1)[0].numpy()  # (L, H, Tq, Tk)
    assert trace.weights.shape == want.shape and float(np.abs(trace.weights - want).max()) <= 1e-6
