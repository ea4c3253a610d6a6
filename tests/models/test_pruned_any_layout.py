"""A pruned export of a mixture of experts reloads as the gated model (transformers saves the experts under the
family's checkpoint names; the pruned model_type reads them back through the family's conversion, where they were
left out and re-initialised), and a family whose heads are not independent once sliced (OLMo 2 normalises every
head's queries together) is refused in one sentence before anything is exported."""
import pytest
import torch

import models
from bench.tiny_any import save
from experiments import pruning
from limits.errors import UserError
from models.gates import gated, head_counts, mask
from models.prune import pruned_copy
from models.pruned_hf import export, load_pruned

TEXT = "The cat sat on"
PLAN = {0: [1]}


@pytest.mark.parametrize("family", ["mixtral", "qwen2_moe"])
def test_an_experts_export_reloads_as_the_gated_model(family, tmp_path):
    m = models.load("hf:" + save(family, "causal", tmp_path / "full"))
    export(pruned_copy(m.model, PLAN), PLAN, str(tmp_path / "pruned"), m.tokenizer)
    reloaded = load_pruned(str(tmp_path / "pruned"), auto="AutoModelForCausalLM")
    ids = m.tokenizer(TEXT, return_tensors="pt")["input_ids"]
    with torch.no_grad(), gated(m.model, mask(head_counts(m.model), PLAN)):
        want = m.model(input_ids=ids).logits                                  # (1, T, V)
    with torch.no_grad():
        got = reloaded(input_ids=ids).logits
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    config = (tmp_path / "pruned" / "config.json").read_text()
    assert "tie_last_hidden_states" not in config  # the capture's setting on the loaded model is not the family's


def test_heads_normalised_together_are_not_cut(tmp_path):
    m = models.load("hf:" + save("olmo2", "causal", tmp_path))
    with pytest.raises(UserError, match="changes what its other heads compute"):
        pruning.report(m.model, m.tokenizer, PLAN, [TEXT])
    m = models.load("hf:" + save("qwen3", "causal", tmp_path / "q"))  # per-head q/k norms: cut exactly
    r = pruning.report(m.model, m.tokenizer, {0: [0, 1]}, [TEXT])  # a whole key/value group: smaller
    assert r.gap < 1e-9 and r.zip[:2] == b"PK" and r.params_pruned < r.params_full and len(r.rows) == 2
    assert r.heads_removed == 2
    mixed = pruning.report(m.model, m.tokenizer, {0: [0, 1], 1: [0]}, [TEXT])  # L1 H0 stays as a silent head
    assert mixed.heads_removed == 2 and mixed.params_pruned == r.params_pruned
    r = pruning.report(m.model, m.tokenizer, PLAN, [TEXT])  # one head of a group: a silent head, no smaller
    assert r.gap < 1e-9 and r.params_pruned == r.params_full and r.rows == [] and r.zip == b"" and not r.heads_removed
