"""Every claim the examples and the lesson make, computed from the model each link opens on.

One test per example (its key in ui.classroom.lesson.EXAMPLES): if a model, a default or a sentence changes so that
a claim no longer holds, the test names the example to rewrite.
"""
import numpy as np
import pytest
import torch

import models
from analysis import bpe, patterns
from analysis import positional as P
from analysis.compare import align, aligned_difference, per_head
from analysis.inside_head import steps
from analysis.kv import known_table, kv_bytes_per_token
from ui.classroom.lesson import ANIMAL, EXAMPLES, LESSON, RARE, RIVER, WIDE

BY_KEY = {ex.key: ex for ex in EXAMPLES}


@pytest.fixture(scope="module")
def bert():
    return models.load("bert", "cpu", "float32")


def _row(tr, word: str) -> int:
    return tr.tokens.index(word)


# each example's key -> the test that checks its claim (explicit: a new example needs its line here)
CLAIMS = {
    "previous": "test_previous_head_on_any_text", "next": "test_next_head",
    "sink": "test_sink_is_cls_with_a_near_zero_value", "coref": "test_coref_and_wide_same_head",
    "wide": "test_coref_and_wide_same_head", "finder": "test_finder_top_two_coreference_heads",
    "bahdanau": "test_bahdanau_reads_the_year_digit_by_digit", "rope": "test_rope_scores_depend_on_the_offset_only",
    "scale": "test_scale_collapses_rows_without_it", "causal": "test_causal_mask_of_the_tiny_decoder",
    "bpe": "test_bpe_rare_word_and_river", "gqa": "test_gqa_quarter_and_the_known_models",
    "prune": "test_prune_one_head_of_the_tiny_decoder",
    "compare": "test_compare_bank_differs_most_in_the_previous_token_head",
    "bracket": "test_bracket_closed_by_the_last_layers_heads", "patch": "test_patch_no_head_restores_a_third",
    "induction": "test_induction_jump_between_1100_and_1200",
    "attribution": "test_attribution_muddy_first_bank_negative",
}


def test_every_example_is_checked_here_and_names_real_views():
    from ui.views import VIEWS

    assert len(EXAMPLES) >= 10 and len({ex.key for ex in EXAMPLES}) == len(EXAMPLES)
    assert {ex.view for ex in EXAMPLES} | {s.view for s in LESSON} <= {v.stem for v in VIEWS}
    assert set(CLAIMS) == set(BY_KEY), set(BY_KEY) ^ set(CLAIMS)
    assert all(callable(globals().get(test)) and test.startswith("test_") for test in CLAIMS.values())


def test_previous_head_on_any_text(bert):
    for text in (ANIMAL, RIVER, WIDE):
        w = bert.attend(text).weights[0, 2]  # (T, T)
        assert w[0, 0] > 0.99                                   # [CLS] looks at itself
        assert min(w[i, i - 1] for i in range(1, len(w))) > 0.99


def test_next_head(bert):
    w = bert.attend(RIVER).weights[1, 8]
    assert 0.65 < np.mean([w[i, i + 1] for i in range(len(w) - 1)]) < 0.78


def test_sink_is_cls_with_a_near_zero_value(bert):
    from models.internals import head_qkv

    d = head_qkv(bert.model, bert.tokenizer, ANIMAL, 2, 7)
    assert d.tokens[0] == "[CLS]" and 0.85 < d.model_weights[:, 0].mean() < 0.89
    norms = np.linalg.norm(d.v, axis=1)
    assert norms[0] * 50 < norms[1:].min()
    assert patterns.rank(patterns.behaviour_scores(bert.attend(ANIMAL).weights, d.tokens)["[SEP]"])[0][2] < 0.2


def test_coref_and_wide_same_head(bert):
    tr = bert.attend(ANIMAL)
    it, animal, street = _row(tr, "it"), _row(tr, "animal"), _row(tr, "street")
    assert 0.6 < tr.weights[5, 11, it, animal] < 0.72 and tr.weights[5, 11, it, street] < 0.05
    assert tr.weights[3, 1, it, animal] > 0.6 and tr.weights[3, 1, it, street] < 0.1
    wide = bert.attend(WIDE)
    it, animal, street = _row(wide, "it"), _row(wide, "animal"), _row(wide, "street")
    assert wide.weights[5, 11, it, animal] > 0.5 > wide.weights[5, 11, it, street]


def test_finder_top_two_coreference_heads(bert):
    tr = bert.attend(ANIMAL)
    words = patterns.word_spans(tr.tokens)
    pronouns, candidates = patterns.pronoun_choices(tr.tokens)
    ranked = patterns.rank(patterns.find_heads("coreference", tr.weights, tr.tokens, pronoun=words[pronouns[-1]][1],
                                               antecedent=words[candidates[0]][1]), 3)
    assert [r[:2] for r in ranked[:2]] == [(3, 1), (5, 11)] and ranked[1][2] > 0.6 > 0.3 > ranked[2][2]


def test_bahdanau_reads_the_year_digit_by_digit():
    d = models.load("seq2seq-bahdanau").decode(BY_KEY["bahdanau"].params["s2s_date"])
    source, out = "".join(d.source), "".join(d.output)
    assert out == "2021-03-03"
    year, month = source.index("2021"), source.lower().index("march")
    for i in range(4):
        assert d.weights[i, year:year + 4].sum() > 0.95 and d.weights[i].argmax() == year + i
    assert all(month <= d.weights[i].argmax() < month + 5 for i in (5, 6))


def test_rope_scores_depend_on_the_offset_only():
    # the view's defaults: head size 32, 32 positions, seed 0
    q, k = torch.randn(2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert P.offset_spread(P.rope_scores(q, k, 32)) < 1e-12


def test_scale_collapses_rows_without_it():
    from models.toy import build

    def mean_max(scale: bool) -> float:
        d = build(384, 1, 0, True, scale, False, True).head_qkv(ANIMAL, 0, 0)
        return float(steps(d.x, d.q, d.k, d.v, d.scale, d.causal)["softmax"].max(-1).mean())

    assert mean_max(False) > 0.95 and 0.25 < mean_max(True) < 0.42


def test_causal_mask_of_the_tiny_decoder():
    tr = models.load("tiny").attend(BY_KEY["causal"].params["ih_digits"])
    assert tr.output == "11345" and tr.kind == "causal"
    assert np.all(np.triu(tr.weights, k=1) == 0)


def test_bpe_rare_word_and_river():
    corpus = bpe.builtin_corpus()
    lo = bpe.min_vocab_size(corpus, "characters")
    tok = bpe.train_bpe(corpus, lo + 300, "characters")  # the view's default vocabulary size
    counts, rows = bpe.compare(RARE, {"BPE": (tok, "characters"), "WP": (bpe.minilm_wordpiece(), "")})
    by_word = {r["word"]: r for r in rows}
    seen = sum(w == "river" for doc in corpus for w, _, _ in bpe.split_words(doc))
    assert seen >= 5 and by_word["river"]["BPE pieces"] == 1
    assert sum(w == "unbelievably" for doc in corpus for w, _, _ in bpe.split_words(doc)) == 1
    assert by_word["unbelievably"]["BPE pieces"] == 8 and by_word["unbelievably"]["WP pieces"] == 5


def test_gqa_quarter_and_the_known_models():
    # the view's defaults: 4 layers, d_model 256, 8 heads (head_dim 32); the link picks 2 kv heads
    assert kv_bytes_per_token(4, 8, 32, 4) == 4 * kv_bytes_per_token(4, 2, 32, 4)
    rows = {r["model"]: r for r in known_table(4096, 2)}
    assert rows["Llama-3-8B"]["per_token"] == "128 KiB" and rows["Llama-2-7B"]["per_token"] == "512 KiB"
    assert (rows["Llama-3-8B"]["heads"], rows["Llama-3-8B"]["kv_heads"]) == (32, 8)


@pytest.mark.slow
def test_prune_one_head_of_the_tiny_decoder():
    import limits
    from experiments import prune_tasks, sorting

    tiny = models.load("tiny")
    lo, hi, default, step = prune_tasks.for_model(tiny, "").eval_range  # the view's count, as views/pruning.py
    hi = lo + (min(hi, max(lo, limits.current().pruning_sentences)) - lo) // step * step
    metric = sorting.held_out_metric(tiny.net, lo + (min(default, hi) - lo) // step * step)
    full = metric({})
    left = {(l, h): metric({l: [h]}) for l in range(2) for h in range(4)}
    assert full == 1.0 and min(left, key=left.get) == (0, 2) and left[0, 2] < 0.1
    assert 0.4 < left[0, 0] < 0.6 and 0.4 < left[0, 3] < 0.6
    assert all(left[1, h] >= 0.8 for h in range(4))


def test_compare_bank_differs_most_in_the_previous_token_head(bert):
    ta, tb = bert.attend("I sat on the river bank"), bert.attend("I paid at the bank")  # the view's defaults
    pairs = align(ta.tokens, tb.tokens)
    bank = [(a, b) for a, b in pairs if ta.tokens[a] == "bank"]
    top = patterns.rank(per_head(aligned_difference(ta.weights, tb.weights, bank, pairs), 1), 1)[0]
    assert top[:2] == (0, 2)
    assert patterns.labels(patterns.head_stats([ta.weights, tb.weights], [ta.tokens, tb.tokens]))[0][2] == \
        "previous token"
    assert (ta.tokens[bank[0][0] - 1], tb.tokens[bank[0][1] - 1]) == ("river", "the")


def test_lesson_positions_step_identical_rows_without_positions(bert):
    tokens = bert.tokenizer.tokenize("the man walked the dog")
    vectors = bert.model.get_input_embeddings().weight[bert.tokenizer.convert_tokens_to_ids(tokens)].detach()
    demo = {key: w.numpy() for key, (_, w) in P.permutation_demo(vectors).items()}
    first, second = P.repeated_token(tokens)
    without, with_pos = demo.values()
    assert np.abs(without[first] - without[second]).max() == 0 and np.abs(with_pos[first] - with_pos[second]).max() > 0


def test_bracket_closed_by_the_last_layers_heads():
    from experiments.logit_lens import decompose
    from ui.classroom.lesson import BRACKET

    d = decompose(models.load("gpt"), BRACKET)
    heads = sorted(((v, k) for k, v in d.parts.items() if "H" in k), reverse=True)
    assert d.target == ")" and [k for _, k in heads[:2]] == ["L3H1", "L3H3"]
    assert 3.2 < heads[0][0] < 3.6 and 2.0 < heads[1][0] < 2.4
    assert [layer[0][0] for layer in d.lens[1:]] == [".", ".", ")"]


def test_patch_no_head_restores_a_third():
    from experiments.patching import patch_heads
    from ui.classroom.lesson import NAME, PATH

    p = patch_heads(models.load("gpt"), NAME, PATH, " name", " path")
    assert p.scores.max() < 1 / 3 and np.unravel_index(p.scores.argmax(), p.scores.shape) == (2, 3)
    assert 0.27 < p.scores.max() < 0.31


def test_induction_jump_between_1100_and_1200():
    from models import induction as mi

    s = mi.scores()
    at = {step: s["scores"][s["steps"].index(step)] for step in (1100, 1200)}
    best = {k: round(max(at[k]["prefix_matching"][1]), 2) for k in at}
    assert best == {1100: 0.19, 1200: 0.80}
    assert round(at[1100]["loss_repeat"], 2) == 3.27 and round(at[1200]["loss_repeat"], 2) == 1.33
    assert all(4.1 < at[k]["loss_first"] < 4.3 for k in at)


def test_attribution_muddy_first_bank_negative(bert):
    from experiments.attribution import attribute
    from ui.classroom.lesson import SHORE

    got = {m: attribute(bert, SHORE[0], m, text_b=SHORE[1]) for m in ("integrated_gradients", "occlusion", "attention")}
    for m, a in got.items():
        words = [(t, v) for t, v in zip(a.tokens, a.scores) if not t.startswith("[")]
        assert max(words, key=lambda w: w[1])[0] == "muddy", m
    bank = got["attention"].tokens.index("bank")
    assert sorted(got["attention"].scores[1:-1])[-2] == got["attention"].scores[bank]  # attention's second word
    assert got["integrated_gradients"].scores[bank] < 0 and got["occlusion"].scores[bank] < 0
