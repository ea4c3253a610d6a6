"""The lesson's answerable questions: each step's pick (a token, a head, a choice or a count) on the figure's own
terms, with the answer computed from the model the step shows, by the same functions its view and teacher notes use.

    q = question("attention", 1)       # q.prompt, q.kind ('head'), q.options ('L0 H0', ...), q.correct, q.why
    check("attention", 1, "L0 H2")     # -> (True, 'L0 H2 puts at least 99.9% of every row on the token just ...')

Each question is computed once per process, when first asked (a model loads then). The step's model and text are
the ones ui/classroom/lesson.py's step opens (tests/classroom/test_answers.py checks they agree). What it does not do:
store
anything (classroom.store) or draw anything (ui/).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from limits.errors import UserError

LESSONS = ("attention",)
ANIMAL = "The animal didn't cross the street because it was too tired."
RARE = "The river was unbelievably quiet"
DATE = "Wednesday, the 3rd of March 2021"
BRACKET = "for i in range(10):\n    print(i"
KV_DEFAULT = (4, 8, 32, 4)  # the KV cache view's defaults: layers, kv heads, head size, bytes (float32)
STEPS = {  # step -> (model, text) the lesson's step opens; None where the step's view takes no sidebar text
    1: ("bert", ANIMAL), 2: ("bert", ANIMAL), 3: None, 4: None, 5: None, 6: ("bert", ANIMAL), 7: None,
    8: ("tiny", "31415"), 9: ("gpt", BRACKET), 10: None,
}


@dataclass(frozen=True)
class Question:
    step: int
    prompt: str
    kind: str                    # "token", "head", "choice" or "count": how the page offers the options
    options: tuple[str, ...]     # what a student may pick, as the figure writes it
    correct: frozenset[str]      # the options that are right, computed from the model
    why: str                     # the reason, with the figure's numbers

    def check(self, answer: str) -> tuple[bool, str]:
        """(right?, why); ValueError when `answer` is not one of the options."""
        picked = " ".join(answer.split())
        if picked not in self.options:
            raise UserError(f"{picked[:40]!r} is not one of this step's choices.")
        return picked in self.correct, self.why


def heads(layers: int, n: int) -> tuple[str, ...]:
    """heads(1, 2) -> ('L0 H0', 'L0 H1')"""
    return tuple(f"L{layer} H{h}" for layer in range(layers) for h in range(n))


def _unique(tokens) -> tuple[str, ...]:
    return tuple(dict.fromkeys(tokens))


@functools.cache
def _bert_trace():
    import models

    return models.shared("bert", "cpu", "float32").attend(ANIMAL)


def _previous_token_heads(step: int, layers: int | None, prompt: str) -> Question:
    """The heads (of the first `layers` layers; None: all) that put over 90% of every row on the token just before."""
    import numpy as np  # here, as torch is below: the app's first page imports this module, and asks no question

    w = _bert_trace().weights[:layers]  # (L, H, T, T)
    back = np.array([[np.diagonal(w[layer, h], -1).min() for h in range(w.shape[1])] for layer in range(w.shape[0])])
    found = [f"L{layer} H{h}" for layer, h in zip(*np.nonzero(back > 0.9))]
    tr = _bert_trace()
    animal = tr.tokens.index("animal")
    row = tr.weights[0, 2, animal, animal - 1]  # the row of 'animal' in L0 H2, on 'the'
    return Question(step, prompt, "head", heads(*w.shape[:2]), frozenset(found),
                    f"{' and '.join(found)} put{'s' if len(found) == 1 else ''} at least {min(back[back > 0.9]):.1%} "
                    f"of every row on the token just before it (the row of 'animal': {row:.1%} on 'the'): a "
                    "previous-token head.")


def _one_head_row() -> Question:
    return _previous_token_heads(1, 1, "Which head of layer 0 puts almost all of each token's weight on the token "
                                       "just before it?")


def _cls_heads() -> Question:
    import numpy as np

    w = _bert_trace().weights  # (L, H, T, T)
    on_cls = w[:, :, :, 0].mean(-1)  # (L, H): mean weight on [CLS], the first key
    found = {f"L{layer} H{h}": on_cls[layer, h] for layer, h in zip(*np.nonzero(on_cls > 0.85))}
    return Question(2, "Pick a head that puts on average more than 85% of its attention on [CLS].", "head",
                    heads(*w.shape[:2]), frozenset(found),
                    ", ".join(f"{k} ({v:.0%})" for k, v in sorted(found.items(), key=lambda kv: -kv[1])) +
                    " park their weight on [CLS]: a head with nothing to add puts it somewhere harmless, since "
                    "softmax must put it somewhere (in L2 H7 [CLS]'s value vector is nearly zero).")


def _rope_offset() -> Question:
    import torch

    from analysis import positional as P

    q, k = torch.randn(2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))  # the tab's defaults
    spread = P.offset_spread(P.rope_scores(q, k, 32))
    options = ("the positions m and n themselves", "only the offset n − m", "neither: the scores are random")
    return Question(3, "Under RoPE, what does the score q·k of a pair of tokens depend on?", "choice", options,
                    frozenset({options[1] if spread < 1e-9 else options[0]}),
                    f"Along every diagonal (one offset n − m) the scores differ by at most {spread:.1e}, float "
                    "rounding: rotating q by m·ω and k by n·ω leaves only the angle (n − m)·ω between them.")


@functools.cache
def rare_word_rows() -> tuple[dict, ...]:
    """Each word of RARE under the BPE the BPE view trains on its built-in story (its default vocabulary) and
    MiniLM's WordPiece: analysis.bpe.compare's rows, computed once per process."""
    from analysis import bpe

    corpus = bpe.builtin_corpus()
    tok = bpe.train_bpe(corpus, bpe.min_vocab_size(corpus, "characters") + 300, "characters")  # the view's default
    return tuple(bpe.compare(RARE, {"BPE": (tok, "characters"), "WP": (bpe.minilm_wordpiece(), "")})[1])


def _rare_word_pieces() -> Question:
    by_word = {r["word"]: r for r in rare_word_rows()}
    n, wp = by_word["unbelievably"]["BPE pieces"], by_word["unbelievably"]["WP pieces"]
    return Question(4, "Into how many pieces does the BPE trained on the built-in story cut 'unbelievably'?", "count",
                    tuple(str(i) for i in range(1, 13)), frozenset({str(n)}),
                    f"{n} pieces: the story uses 'unbelievably' once, so few of its pairs were merged; 'river' is "
                    f"{by_word['river']['BPE pieces']} token. MiniLM's WordPiece, trained on far more text, "
                    f"needs {wp}.")


def _month_reading() -> Question:
    import models

    d = models.shared("seq2seq-bahdanau").decode(DATE)
    source = "".join(d.source)
    starts = [i for i, c in enumerate(source) if c != " " and (i == 0 or source[i - 1] == " ")]
    words = source.split()
    looked = [int(d.weights[i].argmax()) for i in (5, 6)]  # the month's two digits in "2021-03-03"
    index = [max(j for j, s in enumerate(starts) if s <= pos) for pos in looked]
    word = {words[j] for j in index}
    span = [(starts[j], starts[j] + len(words[j])) for j in index]
    share = min(float(d.weights[i, a:b].sum()) for i, (a, b) in zip((5, 6), span))  # of the word's characters
    return Question(5, f"The decoder writes {''.join(d.output)}. While it writes the month 03, which input word does "
                    "it look at most?", "token", tuple(words), frozenset(word),
                    f"Each digit of the month puts at least {share:.0%} of its attention on "
                    f"{' and '.join(sorted(word))}: the month is read from the letters of its name, not from a digit.")


def _rollout_collector() -> Question:
    from analysis.rollout import rollout

    tr = _bert_trace()
    received = rollout(tr.weights, 0.5, "mean").sum(0)  # (T,): the view's defaults (residual 0.5, mean)
    top = tr.tokens[int(received.argmax())]
    return Question(6, "After all six layers, which token collects the most attention (the largest column of "
                    "rollout)?", "token", _unique(tr.tokens), frozenset({top}),
                    f"'{top}' collects {received.max() / received.sum():.0%} of all rollout weight.")


def _cache_bytes() -> Question:
    from analysis.kv import kv_bytes_per_token

    per_token = kv_bytes_per_token(*KV_DEFAULT)
    options = ("2 KiB", "4 KiB", "8 KiB", "16 KiB", "32 KiB")
    layers, kv_heads, head, size = KV_DEFAULT
    return Question(7, "How much does the cache grow per token for the default decoder (4 layers, 8 heads of 32, "
                    "float32)?", "choice", options, frozenset({f"{per_token // 1024} KiB"}),
                    f"2 (keys and values) · {layers} layers · {kv_heads} heads · {head} · {size} bytes = "
                    f"{per_token:,} bytes = {per_token // 1024} KiB per token.")


@functools.cache
def tiny_without_each_head() -> tuple[float, dict[tuple[int, int], float]]:
    """The tiny decoder's exact match on the Pruning view's held-out strings: whole, and with each head switched off
    alone -> (whole, {(layer, head): exact match})."""
    import limits
    import models
    from experiments import prune_tasks, sorting

    tiny = models.shared("tiny")
    lo, hi, default, step = prune_tasks.for_model(tiny, "").eval_range  # the view's count, as views/pruning.py
    hi = lo + (min(hi, max(lo, limits.current().pruning_sentences)) - lo) // step * step
    metric = sorting.held_out_metric(tiny.net, lo + (min(default, hi) - lo) // step * step)
    return metric({}), {(layer, h): metric({layer: [h]}) for layer in range(2) for h in range(4)}


def _costliest_head() -> Question:
    whole, left = tiny_without_each_head()
    worst = min(left, key=left.get)
    return Question(8, "Which single head of the tiny decoder costs most when switched off?", "head", heads(2, 4),
                    frozenset({f"L{worst[0]} H{worst[1]}"}),
                    f"Without L{worst[0]} H{worst[1]} exact match falls from {whole:.0%} to {left[worst]:.0%}; "
                    f"the next costliest head leaves {sorted(left.values())[1]:.0%}.")


def _bracket_head() -> Question:
    import models
    from experiments.logit_lens import decompose

    d = decompose(models.shared("gpt"), BRACKET)
    shares = {k.replace("H", " H"): v for k, v in d.parts.items() if k.startswith("L") and "H" in k}
    top = max(shares, key=shares.get)
    return Question(9, f"Which head adds most to the logit of '{d.target}' directly?", "head", heads(4, 4),
                    frozenset({top}), f"{top} adds {shares[top]:+.1f} to the logit of '{d.target}', the largest "
                    "direct share of any head.")


def _induction_head() -> Question:
    import numpy as np

    from models import induction as mi

    s = mi.scores()
    at = s["scores"][s["steps"].index(1200)]
    matching = at["prefix_matching"][1]  # layer 1's heads
    best = int(np.argmax(matching))
    return Question(10, "At step 1,200, which head of layer 1 has the highest prefix-matching score?", "head",
                    heads(2, 4)[4:], frozenset({f"L1 H{best}"}),
                    f"L1 H{best}: prefix matching {matching[best]:.2f} at step 1,200 (its best at step 1,100 was "
                    f"{max(s['scores'][s['steps'].index(1100)]['prefix_matching'][1]):.2f}).")


MAKERS = {1: _one_head_row, 2: _cls_heads, 3: _rope_offset, 4: _rare_word_pieces, 5: _month_reading,
          6: _rollout_collector, 7: _cache_bytes, 8: _costliest_head, 9: _bracket_head, 10: _induction_head}


@functools.cache
def question(lesson: str, step: int) -> Question:
    """Step `step` (1-based) of `lesson`; ValueError for a lesson or step that does not exist."""
    if lesson not in LESSONS:
        raise UserError(f"There is no lesson {lesson!r}; there is {', '.join(LESSONS)}.")
    if step not in MAKERS:
        raise UserError(f"The lesson has steps 1 to {len(MAKERS)}, not {step}.")
    return MAKERS[step]()


def check(lesson: str, step: int, answer: str) -> tuple[bool, str]:
    """(right?, why) for a student's `answer` to `step`: the checker classroom.store uses."""
    return question(lesson, step).check(answer)
