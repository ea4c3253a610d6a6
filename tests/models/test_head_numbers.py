"""models.pruned_modeling.heads_at, the one place that says which original head sits at each position after
pruning (models.prune.original_heads, an export's traces in models.hf.common.unpruned and Inside a head's rows in
models.internals read it), against examples worked by hand, and an export's traces put heads where it says."""
import torch

from models.pruned_modeling import heads_at

# 4 heads a layer; L0 lost H1, L1 nothing, L2 every head (it keeps one silent head), L3 H0 and H3 (plan keys as an
# export's config writes them: strings)
PLAN = {"0": [1], "2": [0, 1, 2, 3], "3": [3, 0]}
BY_HAND = [[0, 2, 3], [0, 1, 2, 3], [-1], [1, 2]]


def test_kept_heads_in_order_and_a_silent_head_where_a_layer_lost_them_all():
    assert [heads_at(PLAN, layer, 4) for layer in range(4)] == BY_HAND
    assert [heads_at({int(k): v for k, v in PLAN.items()}, layer, 4) for layer in range(4)] == BY_HAND  # int keys


def test_a_llama_style_model_says_which_heads_it_holds():
    positions = [[2, 0, -1, -1], [0, 1, 2, 3]]  # L0 holds H2 then H0 and a padded group's two fillers
    assert heads_at({"0": [1, 3]}, 0, 4, positions) == [2, 0, -1, -1]  # its own order, not the plan's
    assert heads_at({"0": [1, 3]}, 1, 4, positions) == [0, 1, 2, 3]


def test_an_exports_traces_put_each_position_at_its_original_head():
    from models.hf.common import unpruned

    n_kept = [len(at) for at in BY_HAND]
    attentions = tuple(torch.arange(1.0, n + 1).view(1, n, 1, 1).expand(1, n, 2, 2) for n in n_kept)  # position p: p+1
    full, _ = unpruned(attentions, PLAN, 4)
    for layer, at in enumerate(BY_HAND):
        want = [0.0] * 4
        for p, h in enumerate(at):
            if h >= 0:  # a silent head is never shown
                want[h] = p + 1.0
        assert full[layer][0, :, 0, 0].tolist() == want, layer
