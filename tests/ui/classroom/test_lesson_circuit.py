"""The lesson's induction step's circuit sentence (ui.classroom.lesson_circuit), against an independent path: the
edges scored
here by experiments.circuits.edge_scores and ranked with pandas' own sort, the heads read here from the raw attention
(the diagonal below the main one; the key after the earlier copy), not through analysis.patterns."""

import numpy as np
import pytest

import models
from data.circuit_tasks import repeats
from experiments.circuits import edge_scores
from ui.classroom import lesson_circuit as lc

SEG = 10  # repeats' default: 10 syllables, then the first 5 again


@pytest.fixture(scope="module")
def induction():
    m = models.load("induction")
    pairs = repeats(lc.PAIRS)
    return m, pairs, lc.find(m, pairs)


def _heads_from_attention(m, pairs) -> tuple[np.ndarray, np.ndarray]:
    ws = np.stack([m.attend(clean).weights for clean, *_ in pairs])            # (P, L, H, T, T)
    T = ws.shape[-1]
    prev = np.diagonal(ws[:, 0], -1, axis1=-2, axis2=-1).mean(axis=(0, 2))    # (H,)
    q = np.arange(SEG, T)                                                       # the repeat's positions
    back = ws[:, 1, :, q, q - SEG + 1].mean(axis=(0, 1))                      # (H,) on the token after the copy
    return prev, back


def test_the_path_and_its_rank_are_edge_scores(induction):
    m, pairs, found = induction
    E = edge_scores(m, pairs, method="eap")
    ranked = E.reindex(E.score.abs().sort_values(ascending=False, kind="stable").index)
    prev, back = _heads_from_attention(m, pairs)
    prev_heads, induction_heads = np.flatnonzero(prev > 0.8), np.flatnonzero(back > 0.2)
    assert len(prev_heads) and len(induction_heads), (prev, back)
    paths = {(f"L0H{p}", f"L1H{i}.k") for p in prev_heads for i in induction_heads}
    order = list(zip(ranked.sender, ranked.receiver))
    rank = 1 + min(order.index(p) for p in paths)
    sender, receiver = order[rank - 1]

    assert (found.path, found.rank, len(found.ranked)) == ((sender, receiver), rank, len(E))
    assert rank <= 5, ranked.head(10)  # the ground truth: the path is among the top 5 edges
    score = float(ranked.score.iloc[rank - 1])
    assert found.ranked.score[found.rank - 1] == pytest.approx(score, abs=1e-6)
    # the sentence is written from `found` (its wording has its own test below): it names that edge and rank
    assert f"**{sender} → {receiver}** {lc._ordinal(rank)} of its {len(E)} edges" in lc.sentence(found)


def test_the_heads_named_are_the_ones_their_attention_shows(induction):
    m, pairs, found = induction
    prev, back = _heads_from_attention(m, pairs)
    np.testing.assert_allclose([found.previous[h] for h in found.previous], prev[list(found.previous)], atol=1e-5)
    np.testing.assert_allclose([found.induction[h] for h in found.induction], back[list(found.induction)], atol=1e-5)
    assert set(found.previous) == set(np.flatnonzero(prev >= prev.max() / 2))
    assert set(found.induction) == set(np.flatnonzero(back >= back.max() / 2))
    said = lc.sentence(found)
    for h, v in found.previous.items():
        assert f"L0 H{h} ({v:.2f})" in said
    for h, v in found.induction.items():
        assert f"L1 H{h} ({v:.2f})" in said


def test_ranked_is_every_edge_strongest_first(induction):
    _, _, found = induction
    size = found.ranked.score.abs().to_numpy()
    assert (np.diff(size) <= 0).all() and list(found.ranked.index) == list(range(len(size)))


def test_the_sentence_says_the_path_what_ranks_above_it_and_its_score():
    import pandas as pd

    ranked = pd.DataFrame({"sender": ["embed", "L0H1", "L0H2"], "receiver": ["logits", "L1H3.q", "L1H3.k"],
                           "score": [0.9, 0.5, -0.25]})
    said = lc.sentence(lc.Found(ranked, {2: 0.97}, {3: 0.35}, ("L0H2", "L1H3.k"), 3))
    assert said.startswith("EAP ranks **L0H2 → L1H3.k** 3rd of its 3 edges by size (above it only embed → logits, "
                           "L0H1 → L1H3.q); score -0.25, patching it lowers the logit difference: the edge carries "
                           "the answer.")
    assert "**L0 H2** writes into the **key input** of the induction head **L1 H3**" in said


def test_no_path_is_said_plainly():
    import pandas as pd

    ranked = pd.DataFrame({"sender": ["L1H3", "embed"], "receiver": ["logits", "L1H3.k"], "score": [-1.0, 0.5]})
    said = lc.sentence(lc.Found(ranked, {2: 0.97}, {3: 0.35}, None, None))
    assert said.startswith("No edge runs from a previous-token head") and "L0 H2 (0.97)" in said


@pytest.mark.parametrize("n, word", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
                                     (13, "13th"), (21, "21st"), (22, "22nd"), (111, "111th")])
def test_ordinal(n, word):
    assert lc._ordinal(n) == word
