"""experiments.prune_tasks.kv_groups_note: the pruning page's sentence on key/value groups a plan leaves partly
used, and on the layers whose per-head copies make the attention larger than unpruned (the row counts from
models.pruned_modeling.kv_layout, the layout the slicing builds; the slicing itself is tested against the gated
model in tests/models/test_pruned_portable_decoders.py)."""
from experiments.prune_tasks import kv_groups_note
from models.pruned_modeling import kv_layout


def test_a_plan_whose_copies_outgrow_the_layer_is_told_so():
    n, kv = 32, 8                                                        # Llama-2-7B's layer: groups of 4
    one = kv_groups_note({0: [0]}, n, kv)                                # 31 query heads, 31 k/v copies
    assert "group 0 (H0–H3)" in one
    assert "the attention of L0 (31 query and 31 key/value heads for 32 and 8) is larger than before pruning" in one
    keep, rows, _ = kv_layout([0], [h // 4 for h in range(n)])
    assert len(keep) + len(rows) == 62 > n + kv
    equal = kv_groups_note({0: [0, 4, 8, 12, 16, 20, 24, 28]}, n, kv)  # every group keeps 3: no copies
    assert "group 7" in equal and "larger than before" not in equal
    assert kv_groups_note({0: [0, 1, 2, 3]}, n, kv) == ""               # a whole group goes: nothing partly used
    small = kv_groups_note({1: [0]}, 4, 2)                               # 3 query and 3 copies for 4 and 2: equal
    assert small and "larger than before" not in small
