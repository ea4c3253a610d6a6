"""models.supported(): a row per architecture, its kind, how its attention is read, and each view's "yes" or the
sentence that view says, read from the same code that refuses."""
import models
from models.hf.common import SUPPORTED


def test_a_row_per_architecture_with_kind_and_each_views_answer():
    table = models.supported()
    assert table.index.is_unique and {"kind", "attention", "heads", "inside_head", "next_token"} <= set(table.columns)
    refused_before = ["opt", "phi3", "gemma", "gemma2", "qwen3", "falcon", "gptj", "bloom", "xlm-roberta", "mbart",
                      "pegasus"]
    assert (table.loc[refused_before, "heads"] == "yes").all()
    assert table.loc["mbart", "kind"] == "encoder-decoder" and table.loc["xlm-roberta", "kind"] == "encoder"
    assert table.loc["opt", "attention"] == "capture" and table.loc["falcon", "attention"] == "output_attentions"
    assert table.loc["llama", "inside_head"] == "yes" and table.loc["llama", "next_token"] == "yes"
    assert table.loc["opt", "next_token"].endswith("not opt.") and "opt lays its heads" in table.loc["opt",
                                                                                                    "inside_head"]
    assert table.loc["bert", "next_token"].startswith("This view follows a decoder-only language model")
    assert {"vit", "deit"} <= set(table.index) and "wav2vec2" not in table.index  # speech is not read as text
    assert len(table) > 100 and "text encoders" in SUPPORTED
