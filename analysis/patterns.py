"""Head behaviours after Clark et al. 2019 ("What does BERT look at?"), from simple statistics.

For each head of one sentence, averaged over its query tokens (FEATURES, in this order): the weight on
the previous token, on the next token, on [CLS] (or a BOS token), on [SEP] (or EOS), on punctuation;
the row entropy divided by log(#keys) (1 = uniform); the weight on the query itself ("self"); the
weight on other positions holding the same token ("same token", averaged over the queries whose
token occurs again, NaN when none does); and the mean distance |i - j| in tokens, weighted by
attention. A head is labelled by the target holding at least half of its attention on average,
else "broad" when its normalised entropy is at least 0.75, else "mixed".
Does not probe syntax (Clark's dependency heads) and does not run a model: it takes weights.
"""
from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from analysis import head_sums_np
from analysis.special import END_TOKENS, SPECIAL_TOKENS, START_TOKENS
from analysis.tokens import byte_level_text
from limits.errors import UserError

TARGETS = ("previous token", "next token", "[CLS]", "[SEP]", "punctuation")
FEATURES = TARGETS + ("entropy", "self", "same token", "distance")
CLS_TOKENS, SEP_TOKENS = START_TOKENS, END_TOKENS  # [CLS] or a start (BOS) token; [SEP] or an end (EOS) token
LABELS = TARGETS + ("broad", "mixed")
SHARE, BROAD = 0.5, 0.75


def _is_punct(token: str) -> bool:
    t = token.lstrip("#").lstrip("Ġ▁")
    return bool(t) and all(c in string.punctuation for c in t)


def sentence_stats(weights: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Per-head behaviours of one sentence: weights [L, H, T, T] -> [L, H, len(FEATURES)] (see FEATURES), from
    one pass over the weights (analysis.head_sums_np, or the compiled analysis.head_sums for a large trace: a
    32 × 32-head model at 512 tokens holds 1 GiB of them)."""
    scores = _scores(weights, tokens)
    return np.stack([scores[f] for f in FEATURES], axis=-1)                                   # (L, H, F)


_KEYS = {"[CLS]": lambda t: t in CLS_TOKENS, "[SEP]": lambda t: t in SEP_TOKENS, "punctuation": _is_punct}


def _scores(weights: np.ndarray, tokens: list[str]) -> dict[str, np.ndarray]:
    """FEATURES and 'induction' of one sentence, name -> [L, H] float64, from one pass (analysis.head_sums): each
    a mean over its queries (previous/next token over the T - 1 that have one; 'same token' over the queries whose
    token occurs again, 'induction' over those with an earlier occurrence followed by a token, NaN when there is
    none; the rest over all T)."""
    n = len(tokens)
    i = np.arange(n)
    toks = np.array(tokens, dtype=object)
    equal = toks[:, None] == toks[None, :]                                                      # (T, T)
    after = np.zeros((n, n), dtype=bool)                                                        # key j + 1 of an
    after[:, 1:] = (equal & (i[None, :] < i[:, None]))[:, :-1]                                  # earlier j, not
    after &= i[None, :] < i[:, None] - 1                                                        # self nor i - 1
    same = equal & ~np.eye(n, dtype=bool)
    keys = np.array([[keep(t) for t in tokens] for keep in _KEYS.values()], dtype=bool).reshape(len(_KEYS), n)
    if weights.size < head_sums_np.COMPILED:  # a sentence's size: numpy, and numba (~100 MB) never imported
        total = head_sums_np.sums(weights, keys, same, after)                                  # (L, H, 1 + 3 + 6)
    else:
        from analysis import head_sums  # compiled with numba: imported (and loaded from its cache) on first use
        total = head_sums.sums(weights, keys, same, after)
    names = tuple(_KEYS) + head_sums_np.ROWS
    queries = dict.fromkeys(names, n) | {"previous token": n - 1, "next token": n - 1,
                                         "same token": int(same.any(-1).sum()), "induction": int(after.any(-1).sum())}
    undefined = {"same token": np.nan, "induction": np.nan}  # no query to average over; else 0 (one token)
    scores = {name: total[..., 1 + k] / queries[name] if queries[name] else
              np.full(total.shape[:2], undefined.get(name, 0.0)) for k, name in enumerate(names)}
    scores["entropy"] = -total[..., 0] / max(n, 1) / np.log(max(n, 2))
    return scores


def head_stats(attentions: Sequence[np.ndarray], tokens: Sequence[list[str]]) -> np.ndarray:
    """Mean of sentence_stats over sentences, each feature over the sentences where it is defined: [L, H, F]."""
    per = np.stack([sentence_stats(w, t) for w, t in zip(attentions, tokens)])               # (N, L, H, F)
    defined = ~np.isnan(per)
    total = np.where(defined, per, 0).sum(0)
    count = defined.sum(0)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def label_index(stats: np.ndarray) -> np.ndarray:
    """[..., F] -> [...] int: the index in LABELS of each head's label (vectorised label())."""
    targets = stats[..., :len(TARGETS)]
    best = targets.argmax(-1)
    share = np.take_along_axis(targets, best[..., None], -1)[..., 0]
    entropy = stats[..., FEATURES.index("entropy")]
    return np.where(share >= SHARE, best, np.where(entropy >= BROAD, len(TARGETS), len(TARGETS) + 1))


def label(s: np.ndarray) -> str:
    """One head's label from its FEATURES vector: [.9, 0, 0, 0, 0, .1, ...] -> 'previous token'."""
    return LABELS[int(label_index(np.asarray(s)))]


def labels(stats: np.ndarray) -> list[list[str]]:
    """[L, H, F] -> label per head, e.g. [['[CLS]', 'broad', ...], ...]."""
    return [[LABELS[i] for i in layer] for layer in label_index(stats).tolist()]


# The head finder: rank heads by one named behaviour, from one sentence's weights or from a table
# computed elsewhere (e.g. means over a corpus, keyed by the same names).

BEHAVIOURS = {  # name -> what its score is, in words a class can read
    "previous token": "the weight each token puts on the token just before it (mean over tokens)",
    "next token": "the weight each token puts on the token just after it",
    "[CLS]": "the share of attention that goes to [CLS] (or a start token)",
    "[SEP]": "the share of attention that goes to [SEP] (or an end token)",
    "punctuation": "the share of attention that goes to punctuation",
    "broad": "how evenly a row spreads: its entropy over log(number of keys), 1 = every token alike",
    "same token": "the weight a repeated token puts on its other occurrences",
    "induction": "the weight a repeated token puts on the token that followed its earlier occurrence (scored on "
                 "the text written twice)",
    "coreference": "the weight the pronoun puts on the word it refers to",
}
PRONOUNS = frozenset({"it", "its", "itself", "he", "him", "his", "himself", "she", "her", "hers", "herself",
                      "they", "them", "their", "theirs", "themselves"})
_FEATURE_OF = {"broad": "entropy"}  # a behaviour read from a FEATURES column of another name
_NOT_NOUNS = frozenset("a an the this that these those and or but because so if when while although though of in "
                       "on at to for with from by as than then there here not no didn doesn don isn wasn t s was "
                       "were is are be been being do does did have has had too very much many who which what "
                       "i you we me us my your our".split())


def induction(weights: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Induction score per head (Olsson et al. 2022): the weight a query puts on the tokens that came right after
    earlier occurrences of its own token ("... A B ... A" -> B), averaged over the queries that have such an
    earlier occurrence; NaN when none has. [L, H, T, T] -> [L, H]. On the previous-token position it is not
    counted (that is the previous-token behaviour). Its table is _scores' 'after', summed by analysis.head_sums."""
    return _scores(weights, tokens)["induction"]


def uniform_like(weights: np.ndarray, kind: str) -> np.ndarray:
    """Even attention of the same shape [L, H, T, T]: over every key, or over keys 0..i for a causal trace;
    the baseline a behaviour score means something against."""
    n_q, n_k = weights.shape[-2:]
    allowed = np.tril(np.ones((n_q, n_k))) if kind == "causal" else np.ones((n_q, n_k))
    return np.broadcast_to(allowed / allowed.sum(-1, keepdims=True), weights.shape)


def behaviour_scores(weights: np.ndarray, tokens: list[str]) -> dict[str, np.ndarray]:
    """Every behaviour but coreference, scored per head on one sentence, all from one pass over the weights:
    [L, H, T, T] -> {name: [L, H]}."""
    return scores_and_stats(weights, tokens)[0]


def scores_and_stats(weights: np.ndarray, tokens: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """behaviour_scores and sentence_stats of one sentence from the same single pass over the weights."""
    scores = _scores(weights, tokens)
    return ({name: scores[_FEATURE_OF.get(name, name)] for name in BEHAVIOURS if name != "coreference"},
            np.stack([scores[f] for f in FEATURES], axis=-1))                                  # (L, H, F)


def word_spans(tokens: list[str]) -> list[tuple[str, list[int]]]:
    """Words as (text, token positions): the pieces of one word joined, the text what they spell.

    WordPiece joins '##' pieces to the word before; GPT-2 and SentencePiece mark a word start ('Ġ', '▁') and
    join unmarked pieces to it; a character-level text (one character per token, spaces among them) joins
    letters and digits between spaces. Special tokens and punctuation are words of their own; whitespace-only
    tokens (a newline 'Ċ', a space ' ') end a word and belong to none. Byte-level pieces are decoded.
    ['[CLS]', 'un', '##seen', 'it', '[SEP]'] -> [('[CLS]', [0]), ('unseen', [1, 2]), ('it', [3]), ('[SEP]', [4])]
    ['<s>', 'The', 'Ġb', 'an', 'k', 'Ċ', 'was'] -> [('<s>', [0]), ('The', [1]), ('bank', [2, 3, 4]), ('was', [6])]
    """
    body = [t for t in tokens if t not in SPECIAL_TOKENS]
    chars = any(t.isspace() for t in body) and all(len(t) == 1 for t in body)  # a character-level model
    marked = not chars and any(t[:1] in ("Ġ", "▁") for t in tokens)  # word starts are marked (GPT-2, SentencePiece)
    groups: list[list[int]] = []
    joinable = False  # may the next piece join the last word?
    for i, t in enumerate(tokens):
        spelled = (byte_level_text(t) or t).replace("▁", " ") if marked else t
        if t not in SPECIAL_TOKENS and not spelled.strip():  # whitespace: ends a word, belongs to none
            joinable = False
            continue
        alone = t in SPECIAL_TOKENS or _is_punct(t)
        if chars:
            starts = not t.isalnum()
        elif marked:
            starts = spelled[:1].isspace()
        else:
            starts = not t.startswith("##")
        if starts or alone or not joinable:
            groups.append([i])
        else:
            groups[-1].append(i)
        joinable = not alone
    return [(_spell([tokens[i] for i in g], marked), g) for g in groups]


def _spell(pieces: list[str], marked: bool) -> str:
    """What a word's pieces spell: ['Ġcaf', 'Ã©'] -> 'café' (byte-level), ['un', '##seen'] -> 'unseen'."""
    if not marked:
        return "".join(p.removeprefix("##") for p in pieces) if len(pieces) > 1 else pieces[0]
    raw = "".join(pieces)
    return (byte_level_text(raw) or raw).replace("▁", " ").strip() or raw


def pronoun_choices(tokens: list[str]) -> tuple[list[int], list[int]]:
    """(pronoun words, candidate antecedent words) as indices into word_spans(tokens).

    Candidates are the words before the last pronoun that are neither special, punctuation, nor in a short
    list of function words: a plain filter, not a parser, so verbs stay in the list ('cross'). The first
    candidate right after 'the', 'a' or 'an' (a likely noun) comes first.
    'The animal didn't cross the street because it was too tired.' -> ([it], [animal, cross, street])
    """
    words = word_spans(tokens)
    pronouns = [w for w, (text, _) in enumerate(words) if text.lower() in PRONOUNS]
    if not pronouns:
        return [], []
    last = pronouns[-1]
    content = [w for w, (text, _) in enumerate(words[:last]) if text.lower() not in _NOT_NOUNS | PRONOUNS
               and text not in CLS_TOKENS | SEP_TOKENS and not _is_punct(text)]
    after_article = [w for w in content if w > 0 and words[w - 1][0].lower() in ("the", "a", "an")]
    return pronouns, after_article[:1] + [w for w in content if w not in after_article[:1]]


def coreference(weights: np.ndarray, pronoun: list[int], antecedent: list[int]) -> np.ndarray:
    """Attention from the pronoun's tokens to the antecedent's tokens, summed over the antecedent's pieces and
    averaged over the pronoun's: [L, H, Tq, Tk] -> [L, H]."""
    return weights[..., pronoun, :][..., antecedent].sum(-1).mean(-1)


def rank(scores: np.ndarray, top: int | None = None) -> list[tuple[int, int, float]]:
    """Heads by score, highest first, NaN last; ties by layer then head.

    [[.1, .9], [.5, .2]] -> [(0, 1, .9), (1, 0, .5), (1, 1, .2), (0, 0, .1)]
    """
    flat = np.nan_to_num(np.asarray(scores, dtype=np.float64).ravel(), nan=-np.inf)
    order = np.argsort(-flat, kind="stable")[:top]
    n_heads = scores.shape[1]
    return [(int(i) // n_heads, int(i) % n_heads, float(scores.ravel()[i])) for i in order]


def find_heads(behaviour: str, weights: np.ndarray | None = None, tokens: list[str] | None = None,
               precomputed: dict[str, np.ndarray] | None = None,
               pronoun: list[int] | None = None, antecedent: list[int] | None = None) -> np.ndarray:
    """The [L, H] score table of one behaviour: from `precomputed` when it holds it (the same names, or
    FEATURES names such as 'entropy' for 'broad'), else from this sentence's weights [L, H, T, T].
    Coreference is always this sentence's: pronoun and antecedent are token positions."""
    if behaviour not in BEHAVIOURS:
        raise UserError(f"Unknown behaviour {behaviour!r}: choose one of {', '.join(BEHAVIOURS)}.")
    if behaviour == "coreference":
        if weights is None or not pronoun or not antecedent:
            raise UserError("Coreference needs a sentence with a pronoun and a word before it to refer to.")
        return coreference(weights, pronoun, antecedent)
    for name in (behaviour, _FEATURE_OF.get(behaviour)):
        if precomputed is not None and name in precomputed:
            return np.asarray(precomputed[name], dtype=np.float64)
    if weights is None or tokens is None:
        raise UserError("No attention to score: give a sentence's weights or a table of scores.")
    return behaviour_scores(weights, tokens)[behaviour]
