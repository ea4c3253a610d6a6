"""The head finder: behaviour scores against a direct computation on hand-made attention, and the heads the
papers talk about coming out on top for the packaged MiniLM."""
import numpy as np
import pytest

from analysis import patterns

TOKENS = ["[CLS]", "the", "cat", ",", "the", "dog", ".", "[SEP]"]


def _heads() -> np.ndarray:
    """[1, 5, T, T]: previous token, [CLS], uniform, to punctuation, to the other 'the'; rows sum to 1."""
    n = len(TOKENS)
    w = np.zeros((1, 5, n, n))
    w[0, 0, np.arange(n), np.maximum(np.arange(n) - 1, 0)] = 1
    w[0, 1, :, 0] = 1
    w[0, 2] = 1 / n
    w[0, 3, :, [3, 6]] = 0.5
    w[0, 4] = np.eye(n)
    w[0, 4, 1], w[0, 4, 4] = np.eye(n)[4] * 0.8 + np.eye(n)[1] * 0.2, np.eye(n)[1] * 0.6 + np.eye(n)[4] * 0.4
    return w


def _direct(w: np.ndarray, tokens: list[str]) -> dict[str, np.ndarray]:
    """The same scores by plain loops over heads and query rows."""
    n, (n_layers, n_heads) = len(tokens), w.shape[:2]
    out = {k: np.zeros((n_layers, n_heads)) for k in ("previous token", "next token", "[CLS]", "[SEP]",
                                                      "punctuation", "broad", "same token")}
    for l in range(n_layers):
        for h in range(n_heads):
            a = w[l, h]
            out["previous token"][l, h] = sum(a[i, i - 1] for i in range(1, n)) / (n - 1)
            out["next token"][l, h] = sum(a[i, i + 1] for i in range(n - 1)) / (n - 1)
            out["[CLS]"][l, h] = a[:, 0].mean()
            out["[SEP]"][l, h] = a[:, n - 1].mean()
            out["punctuation"][l, h] = (a[:, 3] + a[:, 6]).mean()
            ent = [-sum(p * np.log(p) for p in row if p > 0) for row in a]
            out["broad"][l, h] = np.mean(ent) / np.log(n)
            twins = [(i, [j for j in range(n) if j != i and tokens[j] == tokens[i]]) for i in range(n)]
            out["same token"][l, h] = np.mean([sum(a[i, j] for j in js) for i, js in twins if js])
    return out


def _direct_induction(w: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Olsson et al.'s induction score by loops: from query i, the weight on k = j + 1 for each earlier j with
    tokens[j] == tokens[i], k < i - 1; mean over the queries that have one."""
    n, out = len(tokens), np.zeros(w.shape[:2])
    for l in range(w.shape[0]):
        for h in range(w.shape[1]):
            rows = [[j + 1 for j in range(i) if tokens[j] == tokens[i] and j + 1 < i - 1] for i in range(n)]
            out[l, h] = np.mean([sum(w[l, h, i, k] for k in set(ks)) for i, ks in enumerate(rows) if ks])
    return out


def test_an_induction_head_copies_what_followed_the_earlier_occurrence():
    tokens = ["<s>", "A", "B", "C", "D", "A", "B", "C", "D"]  # a sequence written twice
    n = len(tokens)
    w = np.zeros((1, 2, n, n))
    w[0, 0, np.arange(n), np.maximum(np.arange(n) - 1, 0)] = 1           # previous token
    for i in range(5, n):                                               # induction: A -> B, B -> C, ...
        w[0, 1, i, i - 3] = 1
    w[0, 1, :5, 0] = 1
    got = patterns.induction(w, tokens)
    np.testing.assert_allclose(got, _direct_induction(w, tokens), atol=1e-12)
    assert got[0, 1] == pytest.approx(1.0) and got[0, 0] == 0.0       # i - 3 = (i - 4) + 1: what followed
    assert np.isnan(patterns.induction(w[..., :5, :5], tokens[:5])).all()  # nothing repeats yet


def test_scores_equal_a_direct_computation_on_hand_made_heads():
    w = _heads()
    got, want = patterns.behaviour_scores(w, TOKENS), _direct(w, TOKENS)
    assert set(got) == set(patterns.BEHAVIOURS) - {"coreference"}
    want["induction"] = _direct_induction(w, TOKENS)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=1e-12, err_msg=name)
    assert [patterns.rank(got[name])[0][:2] for name in ("previous token", "[CLS]", "broad", "punctuation",
                                                         "same token")] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]
    assert got["broad"][0, 2] == pytest.approx(1.0) and got["same token"][0, 4] == pytest.approx(0.7)  # (0.8 + 0.6) / 2


def test_coreference_sums_the_antecedents_pieces_and_means_the_pronouns():
    tokens = ["[CLS]", "the", "ant", "##eater", "ran", "because", "it", "was", "late", "[SEP]"]
    w = np.zeros((2, 3, 10, 10))
    w[..., :, 0] = 1.0
    w[1, 2, 6] = 0
    w[1, 2, 6, [2, 3, 4]] = [0.3, 0.4, 0.3]
    words = patterns.word_spans(tokens)
    assert words[2] == ("anteater", [2, 3])
    pronouns, candidates = patterns.pronoun_choices(tokens)
    assert [words[i][0] for i in pronouns] == ["it"] and [words[i][0] for i in candidates] == ["anteater", "ran"]
    scores = patterns.find_heads("coreference", w, tokens, pronoun=[6], antecedent=[2, 3])
    assert scores.shape == (2, 3) and scores[1, 2] == pytest.approx(0.7) and scores.sum() == pytest.approx(0.7)
    with pytest.raises(ValueError, match="pronoun"):
        patterns.find_heads("coreference", w, tokens, pronoun=[], antecedent=[2])


def test_a_precomputed_table_is_used_when_it_has_the_behaviour():
    w = _heads()
    table = {"previous token": np.array([[0.0, 0.0, 0.0, 0.0, 0.9]]), "entropy": np.full((1, 5), 0.25)}
    assert patterns.rank(patterns.find_heads("previous token", w, TOKENS, precomputed=table))[0][:2] == (0, 4)
    np.testing.assert_array_equal(patterns.find_heads("broad", precomputed=table), table["entropy"])
    np.testing.assert_array_equal(patterns.find_heads("[CLS]", w, TOKENS, precomputed=table),
                                  patterns.behaviour_scores(w, TOKENS)["[CLS]"])  # not in the table: this text
    with pytest.raises(ValueError, match="Unknown behaviour"):
        patterns.find_heads("syntax", w, TOKENS)


def test_rank_puts_undefined_scores_last_and_breaks_ties_by_position():
    assert patterns.rank(np.array([[0.1, np.nan], [0.5, 0.1]])) == [(1, 0, 0.5), (0, 0, 0.1), (1, 1, 0.1),
                                                                      (0, 1, pytest.approx(np.nan, nan_ok=True))]
    assert len(patterns.rank(np.zeros((6, 12)), top=8)) == 8


SENTENCES = ["The animal didn't cross the street because it was too tired.",
             "I sat on the river bank and watched the boats go by.",
             "She gave the book to her brother, who read it twice.",
             "When the rain stopped, the children ran outside to play."]


@pytest.fixture(scope="module")
def minilm():
    import models

    return models.load("bert", "cpu", "float32")


def test_the_famous_heads_of_minilm_come_out_on_top(minilm):
    traces = [minilm.attend(s) for s in SENTENCES]
    mean = {k: np.mean([patterns.behaviour_scores(t.weights, t.tokens)[k] for t in traces], 0)
            for k in ("previous token", "next token", "[CLS]", "broad")}
    (l, h, prev), second = patterns.rank(mean["previous token"], 2)
    assert (l, h) == (0, 2) and prev > 0.99 and second[2] < 0.5       # one head does nothing else
    assert patterns.rank(mean["next token"], 1)[0][:2] == (1, 8)
    assert all(score > 0.8 for _, _, score in patterns.rank(mean["[CLS]"], 3))  # [CLS] is MiniLM's sink
    assert {l for l, _, _ in patterns.rank(mean["broad"], 5)} == {0}   # the broad, bag-of-words heads: layer 0


def test_the_coreference_heads_link_it_to_the_animal(minilm):
    tr = minilm.attend(SENTENCES[0])
    words = patterns.word_spans(tr.tokens)
    pronouns, candidates = patterns.pronoun_choices(tr.tokens)
    assert words[pronouns[-1]][0] == "it" and words[candidates[0]][0] == "animal"
    scores = patterns.find_heads("coreference", tr.weights, tr.tokens, pronoun=words[pronouns[-1]][1],
                                 antecedent=words[candidates[0]][1])
    top = patterns.rank(scores, 3)
    assert {lh[:2] for lh in top[:2]} == {(3, 1), (5, 11)} and top[1][2] > 0.6 and top[2][2] < 0.3
    street = tr.tokens.index("street")
    assert tr.weights[5, 11, words[pronouns[-1]][1][0], street] < 0.05  # the other noun gets almost nothing


def test_even_attention_is_the_baseline_of_a_behaviour():
    tokens = ["<s>", "A", "B", "C", "A", "B", "C"]
    w = np.zeros((1, 1, 7, 7))
    causal = patterns.uniform_like(w, "causal")
    np.testing.assert_allclose(causal.sum(-1), 1.0)
    assert causal[0, 0, 2, 3] == 0 and causal[0, 0, 6, 0] == pytest.approx(1 / 7)
    # query 4 ("A") has "B" (2) after its earlier "A"; 5 and 6 likewise: even weights 1/5, 1/6, 1/7
    np.testing.assert_allclose(patterns.induction(causal, tokens), _direct_induction(causal, tokens))
    assert patterns.induction(causal, tokens)[0, 0] == pytest.approx((1 / 5 + 1 / 6 + 1 / 7) / 3)
    assert patterns.uniform_like(w, "self")[0, 0, 0, 6] == pytest.approx(1 / 7)


def test_word_spans_join_pieces_of_every_notation():
    assert patterns.word_spans(["<s>", "The", "Ġb", "an", "k", "Ċ", "was", "Ġna", "Ã", "¯", "ve", ","]) == [
        ("<s>", [0]), ("The", [1]), ("bank", [2, 3, 4]), ("was", [6]), ("naïve", [7, 8, 9, 10]), (",", [11])]
    assert patterns.word_spans(["▁The", "▁cat", "s", "</s>"]) == [("The", [0]), ("cats", [1, 2]), ("</s>", [3])]
    chars = ["2", "3", " ", "m", "a", "y", ",", " ", "2", "0", "2", "6", "</s>"]  # a character-level model
    assert patterns.word_spans(chars) == [("23", [0, 1]), ("may", [3, 4, 5]), (",", [6]), ("2026", [8, 9, 10, 11]),
                                          ("</s>", [12])]
