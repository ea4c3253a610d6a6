"""models.supported() reads an architecture that is another's under a second name by the code that runs it: GPT-SW3's
default config is GPT-2's (a loaded one says model_type "gpt2") and it has no modeling file of its own, so its row
was read as computing its own attention ("output_attentions", Next token refused) while a loaded GPT-SW3 is split."""
import models
from bench.tiny_any import save
from experiments.logit_lens import decompose


def test_gpt_sw3_row_is_what_a_loaded_gpt_sw3_does(tmp_path):
    model = models.load("hf:" + save("gpt-sw3", "causal", tmp_path))
    d = decompose(model, "The cat sat on")
    assert abs(d.total - d.logit) < 1e-4
    row = models.supported().loc["gpt-sw3"]
    assert (row["attention"], row["next_token"], row["inside_head"]) == ("capture", "yes", "yes"), dict(row)
