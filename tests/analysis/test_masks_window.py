"""analysis.masks.causal with a sliding window against transformers' own sliding-window mask function."""
import pytest
import torch
from transformers.masking_utils import and_masks, causal_mask_function, sliding_window_overlay

from analysis import masks


@pytest.mark.parametrize("n_query, n_key, window", [(6, 6, 1), (6, 6, 3), (4, 9, 2), (5, 5, 10)])
def test_a_sliding_window_mask_is_transformers_own(n_query, n_key, window):
    fn = and_masks(causal_mask_function, sliding_window_overlay(window))
    offset = n_key - n_query  # the queries are the last positions
    t = torch.tensor
    want = torch.tensor([[bool(fn(t(0), t(0), t(offset + i), t(j))) for j in range(n_key)] for i in range(n_query)])
    assert torch.equal(masks.causal(n_query, n_key, window=window), want)
    assert torch.equal(masks.causal(n_query, n_key, window=None), masks.causal(n_query, n_key))
