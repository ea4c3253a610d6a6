"""python -m prune on a tiny random GPT-2 with rows of text: the plan by perplexity, the export of the pruned causal LM
checked against the gated model, and the lines that load it where this project is not."""
import io

import pytest

from data import reviews
from prune.__main__ import run


@pytest.mark.slow  # importance, the plan's curve, timing and the export on a causal LM: ~15 s on 2 busy cores
def test_cli_prunes_and_exports_a_decoder(tiny_folder, tmp_path, one_thread):
    rows = tmp_path / "rows.csv"
    rows.write_text("text\n" + "\n".join(r["text"] for r in reviews.rows(24, seed=1)) + "\n")
    printed = io.StringIO()
    got = run(["--model", tiny_folder("gpt2"), "--data", str(rows), "--keep", "0.95", "--out",
               str(tmp_path / "pruned"), "--batch", "2", "--seq-len", "16", "--repeats", "3", "--seeds", "2"], printed)
    text = printed.getvalue()
    assert "GPT2LMHeadModel: causal LM head" in text and "measure perplexity" in text
    check = got["check"]
    assert check["class"] == "PrunedGPT2LMHeadModel" and check["reload_ok"], check
    assert f"equal the gated model's on {check['predictions']}/{check['predictions']}" in text
    assert "transformers.AutoModelForCausalLM.from_pretrained(OUT, trust_remote_code=True)" in text
    assert 'transformers.pipeline("text-generation", model=OUT, trust_remote_code=True)' in text
    assert sum(map(len, got["plan"].plan.values())) >= 1  # the export removed heads
