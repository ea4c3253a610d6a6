"""AppTest: the own-rows pruning lab's timing in plain words (issue: with the pruned model slower, 104.23 ms against
169.64 ms, the caption said "0.61× faster", with IQRs of about 295 ms unremarked; and "Timing: tokens per row" at
128 on a model of 64 positions was cut to 64 in silence while the command kept `--seq-len 128`; then it was offered
and said to be capped: now only what the model embeds is offered). The shipped
classifier (64 positions) and its rows; the words are checked against experiments.own.timing_words and the page's
own table of medians."""
import re

import pytest

from experiments import own
from tests.views.test_pruning_own_page import _own_page, _texts

TESTER = dict(batch=16, seq_len=64, speedup=104.23 / 169.64, full_ms=104.23, pruned_ms=169.64, full_iqr_ms=296.28,
              pruned_iqr_ms=294.99)


def test_slower_is_said_as_slower_and_iqrs_over_the_medians_are_called_noise():
    shape, way = own.timing_words(TESTER, 128)
    assert shape == "batch 16 × 64 tokens (capped from the 128 asked: the model embeds 64 positions)"
    assert way.startswith("the pruned model 1.63× slower, but this is noise: the IQRs (296.28 and 294.99 ms) exceed "
                          "the medians (104.23 and 169.64 ms)")
    fast = dict(TESTER, speedup=2.0, full_ms=100.0, pruned_ms=50.0, full_iqr_ms=2.0, pruned_iqr_ms=1.0)
    assert own.timing_words(fast, 64) == ("batch 16 × 64 tokens", "the pruned model 2.00× faster")
    close = dict(fast, speedup=100 / 98, pruned_ms=98.0, full_iqr_ms=5.0)
    assert own.timing_words(close)[1].endswith("within noise: the full model's IQR (5.00 ms) exceeds the 2.00 ms "
                                            "between the medians")
    assert own.timing_words(dict(close, pruned_iqr_ms=3.0))[1].endswith(
        "within noise: the IQRs (5.00 and 3.00 ms) exceed the 2.00 ms between the medians")
    one = own.timing_words(dict(TESTER, pruned_iqr_ms=10.0))[1]
    assert "noise: the full model's IQR (296.28 ms) exceeds its median (104.23 ms)" in one


@pytest.mark.slow  # a plan, then pruning and timing through AppTest
def test_the_page_offers_only_the_tokens_the_model_embeds_and_says_which_way_the_timing_went(classifier, one_thread):
    folder, data = classifier
    at = _own_page(folder)
    at.file_uploader[0].upload("rows.csv", data, "text/csv").run()
    for key in ("prune_own_seq", "prune_own_len"):  # no choice past the 64 positions the model embeds
        box = at.select_slider(key=key)
        assert max(box.options, key=int) == "64" and box.value == 64, (key, box.options)
    assert "--seq-len 64 " in at.code[0].value and "--max-length 64 " in at.code[0].value
    at.slider(key="prune_own_keep").set_value(0.5)  # some heads can go
    at.toggle(key="prune_own_run").set_value(True).run()
    at.toggle(key="prune_own_export").set_value(True).run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    table = at.dataframe[-1].value
    full, pruned = (float(table[table["model"] == m]["median (ms)"].iloc[0]) for m in ("full", "pruned"))
    said = _texts(at)
    assert "Batch 16 × 64 tokens on cpu" in said and "capped" not in said
    ratio, way = re.search(r"the pruned model (\d+\.\d\d)× (faster|slower)", said).groups()
    assert way == ("faster" if full > pruned else "slower") or abs(full - pruned) < 0.02  # the table rounds to 0.01
    assert abs(float(ratio) - max(full, pruned) / min(full, pruned)) < 0.01 + 0.02 / min(full, pruned)
