"""Activation patching: which heads (and which residual positions) carry a behaviour, measured causally.

Run a clean text and a corrupted one that differs in a few tokens (the same number of tokens), measure the logit
difference logit(answer) - logit(wrong) at the last position of each, then run the corrupted text again with one
component's activation copied from the clean run, and see how much of the difference comes back:

    score = (patched - corrupt_diff) / (clean_diff - corrupt_diff)      # 1: this component alone restores it; 0: none

A head's activation is its output at every position (its slice of the input to the attention output projection,
models.gates); the residual stream is patched at one position of one layer's input (Meng et al. 2022; Wang et al.
2023). One head at a time: each layer is one batched forward of its heads, row r patching head r. An encoder with a
classification head (models.task_head, or the classifier an hf: encoder keeps) uses the class logit difference
(answer, wrong: label names); an encoder with its masked-LM head the logit difference at its (last) mask token, which
both texts must hold at the same place; a BERT-style causal LM (its head kept) the next token after the text (its
tokenizer's end mark left off); an encoder-decoder the first token it would write. It does not patch
attention weights or paths between heads, and does not search for a circuit: it scores each component alone. What a
pair is in each family (its ids, its answers, the logits read) is experiments.patch_pair's.

    p = patch_heads(load("gpt"), "def area(name): return name *", "def area(path): return path *", " name", " path")
    p.scores            # (layers, heads): (4, 4); p.clean_diff 1.14, p.corrupt_diff -3.14

(The IOI pair, "When Mary and John went to the store, John gave a drink to", needs names of as many tokens each:
in the built-in `gpt`'s tokenizer ' John' is four tokens and ' Mary' two, so there it is refused in one sentence.)
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from experiments.patch_pair import Runner, pair_ids
from experiments.window_reach import out_of_reach
from limits.errors import UserError
from models import gates
from models.gates import edited, gated, head_counts, recorded
from models.sites import head_sites, residual_blocks

Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class Patched:
    tokens: list[str]          # the clean text's tokens
    corrupt_tokens: list[str]  # the corrupted text's tokens (as many)
    rows: list[str]            # what each row of scores is: "layer 3", or "decoder 1 cross" in an encoder-decoder
    scores: np.ndarray         # float [rows, heads] (patch_heads) or [rows, tokens] (patch_residual); NaN past a
                               # layer's heads after pruning
    clean_diff: float          # logit(answer) - logit(wrong), clean run
    corrupt_diff: float        # the same, corrupted run
    metric: str                # "logit difference at the last token" or "class logit difference"


def lined_up(model, clean: str, corrupt: str, answer: str, wrong: str) -> None:
    """ValueError with one sentence unless the two texts line up token by token in this model's tokenizer, the
    answer and the wrong answer are one token each (or class labels), and (a sliding-window model) the texts differ
    within what its windows carry to the last token: what patch_heads checks before it runs anything. It does not run
    the model, so it cannot say whether the model prefers the answer."""
    a, b, _, _ = pair_ids(Runner(model), clean, corrupt, answer, wrong)
    if why := out_of_reach(model, a, b):
        raise UserError(why)


def _setup(model, clean, corrupt, answer, wrong):
    runner = Runner(model)
    a, b, ia, iw = pair_ids(runner, clean, corrupt, answer, wrong)
    with torch.no_grad(), recorded(model) as kept:
        clean_diff = _diffs(runner.logits(a), ia, iw)[0]
    with torch.no_grad():
        corrupt_diff = _diffs(runner.logits(b), ia, iw)[0]
    if abs(clean_diff - corrupt_diff) < 1e-6:
        raise UserError(out_of_reach(model, a, b) or
                        f"Both texts give the same logit difference ({clean_diff:.3g}), so there is nothing to "
                        "restore: make the corrupted text change which answer the model prefers.")
    return runner, a, b, ia, iw, kept, clean_diff, corrupt_diff


def _diffs(logits: torch.Tensor, ia: int, iw: int) -> np.ndarray:
    """(B, V) -> (B,) logit(answer) - logit(wrong), in float64."""
    return (logits[:, ia].double() - logits[:, iw].double()).cpu().numpy()


def patch_heads(model, clean: str, corrupt: str, answer: str, wrong: str, progress: Progress = None) -> Patched:
    """Each head's output at every position, from the clean run into the corrupted run, one head at a time."""
    runner, a, b, ia, iw, kept, clean_diff, corrupt_diff = _setup(model, clean, corrupt, answer, wrong)
    sites, counts = head_sites(model), head_counts(model)
    scores = np.full((len(counts), max(counts)), np.nan)
    for i, n in enumerate(counts):
        source = kept["heads"][i][0]                           # (T, H, hs) clean
        rows = torch.arange(n)

        def patch(j: int, heads: torch.Tensor, i=i, source=source, rows=rows) -> torch.Tensor:
            if j != i:
                return heads
            heads = heads.clone()                              # (n, T, H, hs): row r patches head r
            heads[rows, :, rows] = source[:, rows].transpose(0, 1).to(heads.dtype)  # (n, T, hs)
            return heads
        with torch.no_grad(), edited(model, ("heads", patch)):
            patched = _diffs(runner.logits(b.expand(n, -1)), ia, iw)
        scores[i, :n] = (patched - corrupt_diff) / (clean_diff - corrupt_diff)
        if progress:
            progress((i + 1) / len(counts))
    return Patched(runner.tokens(a), runner.tokens(b), [s.name for s in sites], scores,
                   float(clean_diff), float(corrupt_diff), runner.metric)


def patch_residual(model, clean: str, corrupt: str, answer: str, wrong: str, progress: Progress = None) -> Patched:
    """The residual stream entering each layer (of the main stack) at each position, clean into corrupted."""
    runner, a, b, ia, iw, kept, clean_diff, corrupt_diff = _setup(model, clean, corrupt, answer, wrong)
    blocks = residual_blocks(model)
    T = b.shape[1]
    if kept["resid"][0].shape[1] != T:  # CPM-Ant runs learned prompt positions before the text's
        raise UserError(f"This model's layers read {kept['resid'][0].shape[1]} positions for the text's {T} tokens, "
                        "so its residual stream cannot be patched token by token: patch its heads instead.")
    scores = np.zeros((len(blocks), T))
    rows = torch.arange(T)
    for i in range(len(blocks)):
        source = kept["resid"][i][0]                           # (T, C) clean

        def patch(j: int, x: torch.Tensor, i=i, source=source) -> torch.Tensor:
            if j != i:
                return x
            x = x.clone()                                      # (T, T, C): row p patches position p
            x[rows, rows] = source.to(x.dtype)                 # (T, C)
            return x
        with torch.no_grad(), edited(model, ("resid", patch)):
            patched = _diffs(runner.logits(b.expand(T, -1)), ia, iw)
        scores[i] = (patched - corrupt_diff) / (clean_diff - corrupt_diff)
        if progress:
            progress((i + 1) / len(blocks))
    stack = "encoder " if runner.kind == "encdec" else "layer "
    return Patched(runner.tokens(a), runner.tokens(b), [f"{stack}{i}" for i in range(len(blocks))], scores,
                   float(clean_diff), float(corrupt_diff), runner.metric)


def restored(model, clean: str, corrupt: str, answer: str, wrong: str, heads: dict[int, Sequence[int]]) -> float:
    """The score with every head in `heads` ({layer: [heads]}) patched at once, in one unbatched run."""
    runner, a, b, ia, iw, kept, clean_diff, corrupt_diff = _setup(model, clean, corrupt, answer, wrong)
    sources = {j: {h: kept["heads"][j][:, :, h] for h in hs} for j, hs in heads.items() if hs}  # (1, T, hs) each
    with torch.no_grad(), gates.patched(model, sources):
        diff = _diffs(runner.logits(b), ia, iw)[0]
    return float((diff - corrupt_diff) / (clean_diff - corrupt_diff))


TINY_GAP = 0.1  # a gap under this share of the logit differences themselves makes the scores mostly noise


def shown(clean: float, corrupt: float) -> tuple[str, str]:
    """Both differences with at least two significant digits each and as many decimals (up to 8) as it takes for the
    gap between them to read right (within a tenth of it): (0.1109, 0.1097) -> ('+0.1109', '+0.1097'), not '+0.111'
    and '+0.110', a gap of 0.001 for one of 0.0012; (0.3512, 0.3545) -> ('+0.3512', '+0.3545'); (0.00304, 0.0257) ->
    ('+0.0030', '+0.0257'); (1.14, -3.14) -> ('+1.14', '-3.14')."""
    small = min((abs(v) for v in (clean, corrupt) if v), default=1.0)
    gap = clean - corrupt
    for d in range(min(8, max(2, 1 - math.floor(math.log10(small)))), 9):
        a, b = f"{clean:+.{d}f}", f"{corrupt:+.{d}f}"
        if a != b and abs((float(a) - float(b)) - gap) <= 0.1 * abs(gap):
            break
    return a, b


def gap_warnings(p: Patched, answer: str, wrong: str, example: bool = False) -> list[str]:
    """Sentences for a gap the scores cannot be read plainly against: one tiny beside the differences themselves
    (scores are shares of it, so they blow up), and one where the clean text favours the answer less than the
    corrupted text does (the score's sign then points away from the answer), or, that aside, one where the clean text
    does not favour the answer at all (`example`: the pair is already the view's example for this model, so that one
    does not send the reader back to it). Empty when none holds."""
    gap, size = p.clean_diff - p.corrupt_diff, max(abs(p.clean_diff), abs(p.corrupt_diff))
    c, k = shown(p.clean_diff, p.corrupt_diff)
    out = []
    if abs(gap) < TINY_GAP * size:
        finite = p.scores[np.isfinite(p.scores)]
        spread = f" (here they run from {finite.min():+.2f} to {finite.max():+.2f})" if finite.size else ""
        share = 100 * abs(gap) / size
        out.append(f"The gap is tiny: clean {c} and corrupted {k} differ by {abs(gap):.2g}, {share:.2g}% of the "
                   "logit differences themselves. Each score divides a change in the difference by this gap, "
                   f"so changes as small as rounding or one head's slight push read as large shares of it{spread}. "
                   "Pick a corrupted text that changes which answer the model prefers.")
    if gap < 0:
        out.append(f"The clean text favours {answer!r} over {wrong!r} less than the corrupted text does ({c} < {k}), "
                   "so the gap is negative: a positive score still means the patch moves the difference towards its "
                   f"clean value, which here is away from {answer!r}, and a negative score means it pushes towards "
                   f"{answer!r}. Swap the two texts (or the two answers) for a positive score to mean 'restores the "
                   "answer'.")
    elif p.clean_diff < 0:
        out.append("On the clean text the model does not prefer the answer: the scores say what moves the logit "
                   "difference, not what makes the model right. " + (
                       "This is already this model's example, so it may not do this task: type a pair it gets right."
                       if example else "Press “Use the example for this model” for a pair it gets right."))
    return out


def check(model) -> None:
    """UserError with one sentence when `model` predicts nothing patching can measure (no next token, no class) or
    lays its heads out where models.sites cannot reach them (OPT, say)."""
    Runner(model)
    head_counts(model)


def class_labels(model) -> list[str] | None:
    """A classifier's label names in id order where patching reads this model's class logits, else None."""
    runner = Runner(model)
    return runner.labels() if runner.kind == "classifier" else None


def mask_of(model) -> str | None:
    """The mask token where patching reads this model's masked-LM head at a mask, else None."""
    return model.tokenizer.mask_token if Runner(model).kind == "mlm" else None


def token_ids(model, text: str) -> list[int]:
    """The ids patching runs for `text` (ValueError for a model it cannot patch, or unusable text)."""
    return Runner(model).ids(text)[0].tolist()


def rows_needed(model, tokens: int) -> tuple[int, int]:
    """Sequences run by patch_heads and patch_residual on texts of `tokens` tokens: (2 + all heads, 2 + L x T)."""
    return 2 + sum(head_counts(model)), 2 + len(residual_blocks(model)) * tokens


def gradient_scores(model, text: str, answer: str, wrong: str) -> np.ndarray:
    """|∂ d / ∂ξ_h| at ξ = 1 on `text`, d the same logit difference (gradient importance for this behaviour, Michel
    et al. 2019, one text, not normalised): [layers, heads], NaN past a layer's heads."""
    runner = Runner(model)
    ids = runner.ids(text)
    ia, iw = runner.index(answer, "answer"), runner.index(wrong, "wrong answer")
    counts = head_counts(model)
    xi = [torch.ones(n, dtype=torch.float64, requires_grad=True) for n in counts]
    with gated(model, xi):
        logits = runner.logits(ids)                            # (1, V)
        d = logits[0, ia].double() - logits[0, iw].double()
    grads = torch.autograd.grad(d, xi)
    out = np.full((len(counts), max(counts)), np.nan)
    for i, g in enumerate(grads):
        out[i, :len(g)] = g.abs().numpy()
    return out


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's ρ over the finite cells of both: ranks (ties averaged), then Pearson. [[1, 2]], [[10, 30]] -> 1.0"""
    keep = np.isfinite(a) & np.isfinite(b)
    ra, rb = _ranks(a[keep]), _ranks(b[keep])
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    """[3, 1, 3] -> [1.5, 0, 1.5]: positions in sorted order, ties given their mean."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    for v in np.unique(x):
        ranks[x == v] = ranks[x == v].mean()
    return ranks
