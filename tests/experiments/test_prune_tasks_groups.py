"""models.pruned_hf.groups_note: the one sentence, on the pruning page and in an export's README, on key/value
groups a plan leaves partly used and how a layer whose groups keep unequal numbers of heads is laid out (padding or
per-head copies, from models.pruned_modeling.kv_layout, the layout the slicing builds; the slicing itself is tested
against the gated model in tests/models/test_pruned_portable_decoders.py)."""
from models.pruned_hf import groups_note


def test_a_partly_used_group_is_named_with_its_layout():
    n, kv = 32, 8                                                        # Llama-2-7B's layer: groups of 4
    one = groups_note({0: [0]}, n, kv)                                   # padded: 32 query, 8 key/value heads
    assert one.startswith("Key/value groups partly removed: L0: group 0 (H0–H3). 4 query heads share each")
    assert "L0 pads each kept group to 4 query heads with 1 silent head (zero output; 32 query and 8 key/value " \
           "heads for 32 and 8): never larger than unpruned." in one
    equal = groups_note({0: [0, 4, 8, 12, 16, 20, 24, 28]}, n, kv)     # every group keeps 3: no padding, no copies
    assert "group 7" in equal and "pads" not in equal and "copy" not in equal
    assert groups_note({0: [0, 1, 2, 3]}, n, kv) == ""                  # a whole group goes: nothing partly used
    copies = groups_note({2: [0, 1, 2, 4, 5, 6]}, 12, 3)                # groups keep 1, 1, 4: copies are smaller
    assert "L2 gives each of its 6 kept query heads its own copy of its group's keys and values" in copies
    assert "(6 query and 6 key/value heads for 12 and 3)" in copies
