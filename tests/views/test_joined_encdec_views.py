"""Every view with two models joined as one encoder-decoder (EncoderDecoderModel: bert2bert) loaded as 'hf:<folder>':
each shows it or says in one sentence why not; never an exception or an error. Heads draws its three attentions,
Pruning judges each stack by the target's next token, and Circuits names the model it refuses by what it is."""

import pytest

from bench.tiny_any import save
from tests.views.view_at import every_view


@pytest.mark.slow  # every view, ~12 s: the quick group draws its attention (tests/models/test_any_family.py)
def test_every_view_shows_bert2bert_or_says_why(tmp_path, monkeypatch):
    for stem, at in every_view(save("encoder-decoder", "seq2seq", tmp_path), monkeypatch):
        if stem == "heads":
            assert any("bert2bert encoder-decoder, 2 + 2 layers × 4 heads" in c.value for c in at.caption)
            assert len(at.radio(key="heads_part").options) == 3 and at.get("plotly_chart")
        if stem == "pruning":
            assert at.metric and at.metric[0].label == "Target-token accuracy"
        if stem == "circuits":
            assert any("not bert2bert: pick one of those" in i.value for i in at.info)
