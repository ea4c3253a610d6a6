"""AppTest: the Heads page says when a decoder's layers see only a sliding window of the text (a tiny Mistral: a
3-token window in both layers; a tiny Gemma 2: in its sliding layer L0 only), and the claim holds in the model's own
weights: nothing beyond the window, something within it."""
import numpy as np
import pytest

import models
from bench.tiny_any import save
from tests.views.view_at import open_view

TEXT = "abcdefghij"


@pytest.mark.parametrize(("family", "said"), [
    ("mistral", ", sliding window of 3 tokens (the query's own included) in every layer"),
    ("gemma2", ", sliding window of 3 tokens (the query's own included) in L0")])
def test_the_caption_names_the_window_the_weights_show(family, said, tmp_path):
    folder = save(family, "causal", tmp_path)
    at = open_view("heads", model="hf:", hf_spec=folder, text=TEXT)
    caption = next(c.value for c in at.caption if " tokens · causal attention" in c.value)
    assert caption.endswith(said), caption
    m = models.load("hf:" + folder)
    w = m.attend(TEXT).weights                                                   # (L, H, T, T)
    T = w.shape[-1]
    far = np.tril(np.ones((T, T), bool), -m.windows[0])                         # keys w or more tokens back
    assert np.all(w[0][:, far] == 0) and np.all(w[0][:, np.tril(np.ones((T, T), bool)) & ~far] > 0)


def test_no_window_no_words(tmp_path):
    at = open_view("heads", model="hf:", hf_spec=save("llama", "causal", tmp_path), text=TEXT)
    caption = next(c.value for c in at.caption if " tokens · causal attention" in c.value)
    assert caption.endswith(" tokens · causal attention"), caption
