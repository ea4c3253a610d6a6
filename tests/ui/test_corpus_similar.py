"""ui.corpus_similar.bound_line: the sentence under the Similar heads tab says what was compared, true to
analysis.corpus_stats.js_groups for every shape."""
from tests.analysis.test_corpus_stats import empty
from ui.corpus_similar import bound_line


def test_the_bound_line_names_what_was_compared():
    assert bound_line(empty(12, 12)).startswith("Every pair of the 144 heads compared")
    assert "within groups of 4 consecutive layers (128 heads, at most 144 per group)" in bound_line(empty(32, 32))
    assert "within each layer (32 heads, at most 144 per group)" in bound_line(empty(13, 32))
    wide = bound_line(empty(2, 200))                          # a layer of more than JS_HEADS heads stays whole
    assert "within each layer (200 heads: one layer, which is never split)" in wide and "at most" not in wide
