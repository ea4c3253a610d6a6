"""One test of whether a model adds ALiBi biases (models.pruned_modeling.adds_alibi), asked by the pruned export's
slicing (attention_layers: BLOOM's, MPT's and Falcon's slopes are cut with their heads) and by the layer reader
the views use (models.block): both must answer as it does."""
import pytest

import models
from bench.tiny_any import save
from models import block
from models.pruned_modeling import adds_alibi, attention_layers
from models.sites import module_of


@pytest.mark.parametrize("model_type, extra, want", [
    ("bloom", {}, True),                  # says nothing in its config: its model builds the biases
    ("mpt", {}, True),                    # attn_config.alibi
    ("falcon", dict(alibi=True), True),   # config.alibi
    ("falcon", {}, False),                # rotary
    ("llama", {}, False),
    ("gpt2", {}, False),
])
def test_one_alibi_test_answers_for_the_export_and_the_views(tmp_path, model_type, extra, want):
    model = models.load("hf:" + save(model_type, "causal", tmp_path, **extra))
    lm = module_of(model)
    assert adds_alibi(lm) is want
    assert (block.of(model).positions == "alibi") is want
    layout, _ = attention_layers(lm)  # a layout the export slices: BLOOM's, MPT's and Falcon's ALiBi rows are cut
    assert layout == {"bloom": "GPT-NeoX", "mpt": "MPT", "falcon": "Falcon"}.get(model_type, layout)
