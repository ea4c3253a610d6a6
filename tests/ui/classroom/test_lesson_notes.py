"""Every lesson step's teacher notes, computed from the model the step opens on: the answer's numbers, and that its
marks sit on the place the question points to in the figure the view draws (same name, same panel, same cells).

One test per step (`step<n>` in its name); a step added to ui.classroom.lesson.LESSON without one fails the first test.
"""
import numpy as np
import pytest

import models
from analysis import bpe
from analysis import positional as P
from analysis.kv import kv_bytes_per_token
from analysis.rollout import rollout
from ui.classroom.lesson import ANIMAL, DATE, LESSON, RARE, Mark, _shapes
from ui.state import DEFAULT_MODEL, DEFAULT_TEXT


@pytest.fixture(scope="module")
def bert():
    return models.load("bert", "cpu", "float32")


def _step(n: int):
    return LESSON[n - 1]


def test_every_step_has_notes_checked_here_and_the_plan_leaves_five_minutes_of_fifty():
    tested = {word for name in globals() if name.startswith("test_") for word in name.split("_")}
    assert {f"step{n}" for n in range(1, len(LESSON) + 1)} <= tested
    assert sum(s.notes.minutes for s in LESSON) == 45 and all(s.notes.minutes > 0 and s.notes.answer for s in LESSON)
    assert all(m.figure for s in LESSON for m in s.notes.marks) and all(s.notes.where for s in LESSON if s.notes.marks)


def test_every_step_restores_a_model_and_a_text():
    for s in LESSON:
        q = s.query()
        assert q["model"] == s.sidebar.get("model", DEFAULT_MODEL) and q["text"] == s.sidebar.get("text", DEFAULT_TEXT)
        assert list(q)[:2] == ["model", "text"] and set(s.params) <= set(q)


def test_step1_animal_looks_at_the_token_before_it(bert):
    tr = bert.attend(ANIMAL)
    (mark,) = _step(1).notes.marks
    row, col = mark.rows[0], mark.cols[0]
    assert (tr.tokens[row], tr.tokens[col]) == ("animal", "the") and col == row - 1
    assert tr.weights[0, 2, row, col] > 0.99
    assert mark.figure == "inside_head_" + "_".join(("softmax", "A·V")) and mark.axes == ""  # the view's 4th row


def test_step2_previous_token_head_and_cls_head(bert):
    tr = bert.attend(ANIMAL)
    prev, cls = tr.weights[0, 2], tr.weights[2, 7]
    assert min(prev[i, i - 1] for i in range(1, len(prev))) > 0.99
    assert 0.85 < cls[:, 0].mean() < 0.89 and tr.tokens[0] == "[CLS]"
    from viz.heads import overview

    fig = overview(tr.weights, tr.tokens, tr.key_tokens)
    boxes = [box for m in _step(2).notes.marks for box in _shapes(m, fig)]
    x, y = fig.data[0].x, fig.data[0].y
    for (layer, head), box in zip(((0, 2), (2, 7)), boxes, strict=True):  # half a cell outside the tile: not on it
        assert x[int(box["x0"] + 1)].startswith(f"H{head} · ") and x[int(box["x1"] - 1)].startswith(f"H{head} · ")
        assert y[int(box["y0"] + 1)].startswith(f"L{layer} · ") and int(box["y1"] - box["y0"]) == len(tr.tokens) + 1


def test_step3_rope_opens_its_tab_and_its_diagonals_are_constant():
    assert _step(3).params["pos_tab"] == "RoPE" and "RoPE" in _step(3).question
    import torch

    q, k = torch.randn(2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))  # the tab's defaults
    assert P.offset_spread(P.rope_scores(q, k, 32)) < 1e-12
    (mark,) = _step(3).notes.marks
    assert mark.diagonal and mark.figure == "rope_scores"


def test_step4_bpe_pieces():
    corpus = bpe.builtin_corpus()
    tok = bpe.train_bpe(corpus, bpe.min_vocab_size(corpus, "characters") + 300, "characters")
    _, rows = bpe.compare(RARE, {"BPE": (tok, "characters"), "WP": (bpe.minilm_wordpiece(), "")})
    by_word = {r["word"]: r for r in rows}
    assert (by_word["unbelievably"]["BPE pieces"], by_word["unbelievably"]["WP pieces"]) == (8, 5)
    assert by_word["river"]["BPE pieces"] == 1 and _step(4).params["bpe_text"] == RARE


def test_step5_the_year_rows_read_2021():
    d = models.load("seq2seq-bahdanau").decode(DATE)
    (mark,) = _step(5).notes.marks
    year = "".join(d.source).index("2021")
    assert "".join(d.output) == "2021-03-03" and mark.cols == (year, year + 3) and mark.rows == (0, 3)
    assert all(d.weights[i, year:year + 4].sum() > 0.95 for i in range(4))
    assert mark.figure == "seq2seq-seq2seq-bahdanau-alignment" and _step(5).params["s2s_date"] == DATE


def test_step6_rollout_diagonal_and_collectors(bert):
    tr = bert.attend(ANIMAL)
    r = rollout(tr.weights, residual=0.5, fusion="mean")  # the view's defaults
    diag = np.diag(r)
    assert tr.tokens[0] == "[CLS]" and tr.tokens[-1] == "[SEP]"
    assert 0.6 < diag[0] < 0.72 and diag[1:].max() <= 0.105 and 0.025 < diag[1:-1].min() and diag[1:-1].max() <= 0.065
    share = r.sum(0) / r.sum()
    assert share[0] > 0.5 and np.argsort(share)[-2] == len(tr.tokens) - 1  # [CLS], then [SEP]
    (mark,) = _step(6).notes.marks
    assert mark.diagonal and mark.axes == "2" and mark.figure == "rollout-flow"  # rollout: the second panel


def test_step7_kv_cache_bytes_per_token():
    # the view's defaults: 4 layers, d_model 256, 8 heads (head size 32), float32
    assert kv_bytes_per_token(4, 8, 32, 4) == 8 * 1024 and kv_bytes_per_token(4, 2, 32, 4) == 2 * 1024
    assert "8 KiB" in _step(7).notes.answer and "2 KiB with 2 kv heads" in _step(7).notes.answer


@pytest.mark.slow
def test_step8_switching_off_l0_h2():
    import limits
    from experiments import prune_tasks, sorting

    tiny = models.load("tiny")
    lo, hi, default, step = prune_tasks.for_model(tiny, "").eval_range
    hi = lo + (min(hi, max(lo, limits.current().pruning_sentences)) - lo) // step * step
    metric = sorting.held_out_metric(tiny.net, lo + (min(default, hi) - lo) // step * step)
    left = {(l, h): metric({l: [h]}) for l in range(2) for h in range(4)}
    assert metric({}) == 1.0 and left[0, 2] < 0.1 and all(left[1, h] >= 0.8 for h in range(4))
    assert 0.4 < left[0, 0] < 0.6 and 0.4 < left[0, 3] < 0.6
    assert _step(8).notes.marks == (Mark("head-importance", rows=(0, 0), cols=(2, 2)),)


def test_step9_the_last_layers_heads_close_the_bracket():
    from experiments.logit_lens import decompose

    step = _step(9)
    d = decompose(models.load("gpt"), step.sidebar["text"])
    assert d.target == ")" and np.unravel_index(d.heads.argmax(), d.heads.shape) == (3, 1)
    assert "+3.4" in step.notes.answer and 3.35 < d.heads[3, 1] < 3.45 and 2.2 < d.heads[3, 3] < 2.3
    assert [layer[0][0] for layer in d.lens[1:]] == [".", ".", ")"]
    assert step.notes.marks == (Mark("next_token_dla_heads", rows=(3, 3), cols=(1, 1)),)


def test_step10_induction_heads_jump_and_need_the_previous_token_head():
    from data.induction import twice
    from experiments import induction as ei
    from models import induction as mi
    from viz.heads import overview

    step, s = _step(10), mi.scores()
    assert step.params["ind_step"] == "1100"
    before, after = (s["scores"][s["steps"].index(k)] for k in (1100, 1200))
    assert round(max(before["prefix_matching"][1]), 2) == 0.19 and round(max(after["prefix_matching"][1]), 2) == 0.80
    assert int(np.argmax(before["prefix_matching"][1])) == int(np.argmax(after["prefix_matching"][1])) == 0  # L1 H0
    assert step.notes.marks == (Mark("induction-heads", head=(1, 0)),)
    tr = mi.load(checkpoint=1100).attend(twice(12))  # the view's default syllables at the step's checkpoint
    fig = overview(tr.weights, tr.tokens, tr.key_tokens)
    n = len(tr.tokens)
    (box,) = _shapes(step.notes.marks[0], fig)  # around the tile of L1 H0: rows of layer 1 (after a gap row), head 0
    assert (box["y0"], box["y1"], box["x0"], box["x1"]) == (n, 2 * n + 1, -1, n)
    assert fig.data[0].y[n + 1].startswith("L1 · ") and fig.data[0].x[n - 1].startswith("H0 · ")
    assert (round(before["loss_repeat"], 2), round(after["loss_repeat"], 2)) == (3.27, 1.33)
    ko = ei.knock_out(mi.read()[0])
    rows = {r["knocked out"]: r for r in ko.table()}
    key = next(k for k in ko.table()[0] if k.startswith("prefix matching"))
    assert ko.layer1_head == 3 and round(ko.table()[0][key], 2) == 0.86 and round(rows["L0 H2"][key], 2) == 0.38
