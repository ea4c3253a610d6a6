"""Head gates and real pruning on a tiny random BERT built here (2 layers, 4 heads, hidden 32)."""
import json

import pytest
import torch
from safetensors.torch import load_file
from transformers import BertConfig, BertModel

from models.gates import gated, head_counts, mask
from models.prune import gap_to_gated, pruned_copy
from models.pruned_hf import export, load_pruned


def tiny_bert(seed: int = 0, dtype=torch.float32) -> BertModel:
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=48, max_position_embeddings=32, attn_implementation="eager")
    return BertModel(cfg).eval().to(dtype)


def inputs(seed: int = 1) -> dict:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 60, (3, 9), generator=g)
    am = torch.ones_like(ids)
    am[1, 6:] = 0  # padding must not matter either way
    return {"input_ids": ids, "attention_mask": am}


@torch.no_grad()
def hidden(model, x) -> torch.Tensor:
    return model(**x).last_hidden_state


def test_gates_of_one_change_nothing_and_do_not_leak():
    m, x = tiny_bert(), inputs()
    before = hidden(m, x)
    with gated(m, mask(head_counts(m), {})):
        assert torch.equal(hidden(m, x), before)
    with gated(m, mask(head_counts(m), {0: [1]})):
        assert not torch.allclose(hidden(m, x), before)
    assert torch.equal(hidden(m, x), before)  # hooks stay, but idle outside the block


def test_gate_zero_matches_zeroed_value_weights():
    """Independent path: a head whose value rows are zero outputs exactly zero, as gate 0 does."""
    m, x = tiny_bert(), inputs()
    with gated(m, mask(head_counts(m), {1: [2]})):
        want = hidden(m, x)
    v = m.encoder.layer[1].attention.self.value
    with torch.no_grad():
        v.weight[16:24] = 0
        v.bias[16:24] = 0
    torch.testing.assert_close(hidden(m, x), want, rtol=0, atol=1e-6)


def test_wrong_gate_shape_is_a_clear_error():
    m = tiny_bert()
    with pytest.raises(ValueError, match="one value per head"):
        with gated(m, [torch.ones(4)]):
            pass


@pytest.mark.parametrize("plan", [{0: [1, 3]}, {0: [0], 1: [1, 2, 3]}, {1: [0, 1, 2, 3]}, {0: [0, 1, 2, 3], 1: [3]}])
def test_pruned_equals_gated(plan):
    m, x = tiny_bert(), inputs()
    pruned = pruned_copy(m, plan)
    counts = [4 - len(plan.get(i, [])) for i in range(2)]
    assert head_counts(pruned) == [max(c, 1) for c in counts]  # an emptied layer keeps one silent head
    assert head_counts(m) == [4, 4]  # the original is untouched
    assert gap_to_gated(m, pruned, plan, x) < 1e-5


def test_export_reloads_with_identical_outputs(tmp_path):
    m, x, plan = tiny_bert(3), inputs(), {0: [2], 1: [0, 3]}
    pruned = pruned_copy(m, plan)
    files = export(pruned, plan, str(tmp_path))
    assert {"config.json", "model.pruned.safetensors", "modeling_pruned.py", "plan.json"} <= set(files)
    assert json.loads((tmp_path / "plan.json").read_text()) == {"0": [2], "1": [0, 3]}
    assert json.loads((tmp_path / "config.json").read_text())["pruned_heads"] == {"0": [2], "1": [0, 3]}
    state = load_file(str(tmp_path / "model.pruned.safetensors"))
    assert state["encoder.layer.1.attention.self.query.weight"].shape == (16, 32)      # 2 heads × 8
    assert state["encoder.layer.0.attention.output.dense.weight"].shape == (32, 24)    # 3 heads × 8
    again = load_pruned(str(tmp_path))
    assert head_counts(again) == [3, 2]
    torch.testing.assert_close(hidden(again, x), hidden(pruned, x), rtol=0, atol=1e-6)


@pytest.mark.parametrize("arch", ["Roberta", "Electra"])
def test_other_bert_layouts_prune_and_reload(arch, tmp_path):
    import transformers

    torch.manual_seed(0)
    cfg = getattr(transformers, f"{arch}Config")(
        vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=40, embedding_size=32, attn_implementation="eager")
    m, x, plan = getattr(transformers, f"{arch}Model")(cfg).eval(), inputs(), {0: [1], 1: [0, 2]}
    x["input_ids"] = x["input_ids"].clamp(min=3)  # RoBERTa counts positions after its padding id 1
    pruned = pruned_copy(m, plan)
    assert head_counts(pruned) == [3, 2] and gap_to_gated(m, pruned, plan, x) < 1e-5
    export(pruned, plan, str(tmp_path))
    torch.testing.assert_close(hidden(load_pruned(str(tmp_path)), x), hidden(pruned, x), rtol=0, atol=1e-6)


def test_an_export_loaded_back_knows_its_original_heads(tmp_path):
    """A BERT export that lost L0 H1 and all of L1 holds L0's H0, H2, H3 at positions 0-2 and one silent head in L1:
    original_heads says so, as the export's own attention (heads back at their original index, cut ones blank)
    shows, and by_original moves scores from positions to those heads."""
    import numpy as np

    from models.prune import by_original, original_heads, original_places, pruned_copy
    from models.pruned_hf import export, load_pruned

    plan = {0: [1], 1: [0, 1, 2, 3]}
    export(pruned_copy(tiny_bert(), plan), plan, str(tmp_path / "out"))
    back = load_pruned(str(tmp_path / "out"))
    assert original_heads(back) == [[0, 2, 3], [-1]] and original_heads(tiny_bert()) == [[0, 1, 2, 3]] * 2
    assert original_places(back) == {(0, 0): (0, 0), (0, 2): (0, 1), (0, 3): (0, 2)}
    with torch.no_grad():  # the reference: the full model gated by the plan; its L0 rows of the kept heads
        want = tiny_bert()(**inputs(), output_attentions=True).attentions[0][:, [0, 2, 3]]    # (B, 3, T, T)
        got = back(**inputs(), output_attentions=True).attentions[0]                        # (B, 3, T, T) by position
    torch.testing.assert_close(got, want)  # position p holds original_heads[0][p]
    scores = np.array([[1.0, 2.0, 3.0], [4.0, np.inf, np.inf]])
    np.testing.assert_array_equal(by_original(back, scores), [[1, np.inf, 2, 3], [np.inf] * 4])


def test_slicing_a_layout_it_cannot_cut_is_a_users_refusal():
    """models.pruned_modeling raises a plain ValueError (it ships in exports without this project): pruning turns
    it into the UserError the views show as a sentence, where a ViT's export showed as a bug's notice."""
    import models
    from limits.errors import UserError
    from models.prune import pruned_copy

    with pytest.raises(UserError, match="Heads can be cut out of BERT-style encoders"):
        pruned_copy(models.load("vit").model, {0: [0]})
