"""viz.bpe figures draw exactly the steps, counts and labels they are given."""
from __future__ import annotations

import numpy as np
import pytest

from analysis import bpe
from viz import bpe as vbpe

CORPUS = ["the <b>bank</b> & the bank", "banks bank the banker"] * 3


@pytest.fixture(scope="module")
def tok():
    return bpe.train_bpe(CORPUS, 40)


def test_ladder_has_one_box_per_token_and_keeps_repeated_tokens(tok):
    text = "the bank the <b>"
    steps = bpe.merge_trace(tok, text)
    fig = vbpe.merge_ladder(steps, bpe.merge_table(tok), "characters", current=len(steps) - 1)
    bar = fig.data[0]
    assert len(bar.x) == sum(len(s.tokens) for s in steps)
    rows = np.asarray(bar.y)
    for row, step in enumerate(steps):
        assert list(np.asarray(bar.x)[rows == row]) == step.widths
        assert sum(step.widths) == len(text.replace(" ", ""))
    last = [t for t, r in zip(bar.text, rows) if r == len(steps) - 1]
    assert last == [t.replace("<", "&lt;").replace(">", "&gt;") for t in tok.encode(text).tokens]
    assert last.count("the") == 2  # positions are numeric, so repeated tokens stay two boxes
    assert list(fig.layout.yaxis.tickvals) == list(range(len(steps)))
    assert fig.layout.yaxis.ticktext[1].startswith(f"#{steps[1].rank} ")


def test_ladder_colours_new_tokens_and_the_current_row(tok):
    steps = bpe.merge_trace(tok, "banker")
    fig = vbpe.merge_ladder(steps, bpe.merge_table(tok), "characters", current=1)
    colors, rows = list(fig.data[0].marker.color), list(fig.data[0].y)
    start = rows.index(1)
    row1 = colors[start:start + len(steps[1].tokens)]
    assert [k for k, c in enumerate(row1) if c == vbpe.NEW] == steps[1].merged
    assert all(c == vbpe.CURRENT for k, c in enumerate(row1) if k not in steps[1].merged)
    assert all(c == vbpe.OTHER for c in colors[: len(steps[0].tokens)])


def test_pair_counts_plot_the_table(tok):
    table = bpe.merge_table(tok, CORPUS)
    fig = vbpe.pair_counts(table, "characters")
    assert list(fig.data[0].y) == [m.count for m in table] and list(fig.data[0].x) == list(range(len(table)))
    assert vbpe.pair_counts(bpe.merge_table(tok), "characters").data[0].y == ()  # counts unknown: nothing drawn


def test_token_counts_escape_names_and_keep_values():
    fig = vbpe.token_counts({"BPE <x>": 7, "characters": 30})
    assert list(fig.data[0].y) == [7, 30]
    assert list(fig.layout.xaxis.ticktext) == ["BPE &lt;x&gt;", "characters"]


def test_rule_label_reads_byte_tokens():
    assert vbpe.rule_label(bpe.Merge(3, "Ġcaf", "Ã©", 2), "bytes") == "#3 ␣caf + é → ␣café"


def test_ladder_draws_only_the_steps_shown_with_their_own_rules(tok):
    steps = bpe.merge_trace(tok, "the banker banks")
    table = bpe.merge_table(tok)
    fig = vbpe.merge_ladder(steps, table, "characters", current=len(steps) - 1, shown=[0, len(steps) - 1])
    rows = np.asarray(fig.data[0].y)
    assert len(fig.data[0].x) == len(steps[0].tokens) + len(steps[-1].tokens) and set(rows) == {0, 1}
    assert list(fig.layout.yaxis.ticktext) == ["start: single symbols", vbpe.rule_label(table[steps[-1].rank],
                                                                                        "characters")]
