"""Your model's own loss and metric on your labelled rows, following its head.

    task = build(load("./my-sentiment"), examples, max_length=128)
    task.measure({0: [3]})  -> {"accuracy": 0.93, "macro-F1": 0.92}   with L0 H3 gated off

The loss is the model's own (`model(**batch).loss`): what it was fine-tuned to lower. Per head:
- sequence classification: one label per row; accuracy (the plan's metric) and macro-F1 over the labels
  that occur; chance = always answering the most common label of the held-out rows.
- token classification: one tag per word, on the word's first sub-token (others ignored, as in HF's
  token-classification examples); token accuracy and macro-F1; chance as above, over tokens.
- masked LM: 15 % of each row's ordinary tokens replaced by the mask token (fixed seed, at least one per row);
  causal LM: every next token. Metric: perplexity, exp(mean loss) (lower is better); chance = the perplexity
  of guessing each token by its frequency in the held-out rows, without context.
- question answering: the answer's first occurrence in the context; exact match of (start, end) and the
  token F1 of the predicted span; chance = a uniformly random span of the context.
Does not: fine-tune, or tokenise beyond max_length (longer rows are cut, with a notice).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from data.labelled import Examples
from limits.errors import UserError
from models.gates import gated, head_counts, mask
from models.task_head import TaskModel

MASK_RATE, MASK_SEED, IGNORE = 0.15, 0, -100
METRICS = {  # head -> (metric the plan keeps, higher is better, the other one shown)
    "sequence classification": ("accuracy", True, "macro-F1"),
    "token classification": ("token accuracy", True, "macro-F1"),
    "masked LM": ("perplexity", False, "loss"),
    "causal LM": ("perplexity", False, "loss"),
    "question answering": ("exact match", True, "token F1"),
}


@dataclass
class OwnTask:
    tm: TaskModel
    score: list[dict]              # batches that score importance (with their labels)
    held: list[dict]               # held-out batches that measure the metric
    n_score: int                   # rows in each
    n_eval: int
    metric_name: str               # "accuracy"
    higher_better: bool
    chance: float                  # the metric of a guess that ignores the input (see the module docstring)
    chance_note: str
    held_rows: Examples | None = None  # the held-out rows as read (timing inputs are made from them)
    notices: tuple[str, ...] = field(default_factory=tuple)

    def loss(self, model, batch: dict) -> torch.Tensor:
        return model(**batch).loss

    def measure(self, plan: dict) -> dict[str, float]:
        """All metrics on the held-out rows with plan's heads gated off."""
        model = self.tm.model
        with torch.no_grad(), gated(model, mask(head_counts(model), plan)):
            return evaluate(model, self.held, self.tm.head)

    def metric(self, plan: dict) -> float:
        return self.measure(plan)[self.metric_name]

    def below_chance(self, base: float) -> str | None:
        """What to say when the full model is no better than chance on the held-out rows (a plan that keeps a share
        of that keeps nothing worth keeping), else None."""
        if (base > self.chance) if self.higher_better else (base < self.chance):
            return None
        shown = (lambda v: f"{v:.1%}") if self.higher_better else (lambda v: f"{v:.3g}")  # noqa: E731
        check = ("the rows are text of the kind this model learned (a random or untrained model predicts none)"
                 if self.tm.kind == "none" else "the rows' labels are the ones this model was fine-tuned on")
        return (f"The full model's {self.metric_name} on your held-out rows, {shown(base)}, is no better than "
                f"chance ({shown(self.chance)}: {self.chance_note}), so the plan keeps a share of nothing: check that "
                f"{check}, before pruning by it.")

    def kept(self, value: float, base: float) -> float:
        """How much of the original is kept: value/base, or base/value for a lower-is-better metric."""
        if self.higher_better:
            return value / base if base > 0 else float(value >= base)
        return base / value if value > 0 else 1.0


def _macro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
    """Mean F1 over the labels that occur in gold or pred. ([0, 1, 1], [0, 1, 0]) -> (1 + 2/3) / 2"""
    f1 = []
    for c in np.union1d(pred, gold):
        tp = np.sum((pred == c) & (gold == c))
        f1.append(2 * tp / (np.sum(pred == c) + np.sum(gold == c)))
    return float(np.mean(f1))


def evaluate(model, batches: list[dict], head: str) -> dict[str, float]:
    """Metrics of `model` (gated or not, as the caller set it) over batches: see METRICS."""
    preds, golds, nll, count, spans = [], [], 0.0, 0, []
    for batch in batches:
        out = model(**batch)
        if head == "question answering":
            s, e = out.start_logits.argmax(-1), out.end_logits.argmax(-1)                  # (B,), (B,)
            spans += list(zip(s.tolist(), e.tolist(), batch["start_positions"].tolist(),
                              batch["end_positions"].tolist()))
        elif head in ("masked LM", "causal LM"):
            logits, labels = out.logits.double(), batch["labels"]                          # (B, T, V), (B, T)
            if head == "causal LM":  # position t predicts token t + 1, as the model's own loss
                logits, labels = logits[:, :-1], labels[:, 1:]
            keep = labels != IGNORE
            nll += float(torch.nn.functional.cross_entropy(logits[keep], labels[keep], reduction="sum"))
            count += int(keep.sum())
        else:
            labels = batch["labels"]                                                       # (B,) or (B, T)
            keep = labels != IGNORE
            preds.append(out.logits.argmax(-1)[keep].cpu().numpy())
            golds.append(labels[keep].cpu().numpy())
    if head in ("masked LM", "causal LM"):
        loss = nll / max(count, 1)
        return {"perplexity": math.exp(min(loss, 700)), "loss": loss}
    if head == "question answering":
        em = np.mean([ps == gs and pe == ge for ps, pe, gs, ge in spans])
        return {"exact match": float(em), "token F1": float(np.mean([_span_f1(*s) for s in spans]))}
    pred, gold = np.concatenate(preds), np.concatenate(golds)
    name = METRICS[head][0]
    return {name: float(np.mean(pred == gold)), "macro-F1": _macro_f1(pred, gold)}


def _span_f1(ps: int, pe: int, gs: int, ge: int) -> float:
    """Token F1 of predicted span [ps, pe] against gold [gs, ge] (end before start: empty). (2, 4, 3, 5) -> 2/3"""
    overlap = max(0, min(pe, ge) - max(ps, gs) + 1)
    if pe < ps or overlap == 0:
        return 0.0
    p, r = overlap / (pe - ps + 1), overlap / (ge - gs + 1)
    return 2 * p * r / (p + r)


def _cut_notice(lengths: list[int], max_length: int) -> tuple[str, ...]:
    cut = sum(n > max_length for n in lengths)
    if not cut:
        return ()
    return (f"{cut} row{'s were' if cut > 1 else ' was'} longer than {max_length} tokens and cut there.",)


def encode(tm: TaskModel, ex: Examples, max_length: int) -> tuple[dict, tuple[str, ...]]:
    """All rows as one padded batch (N, T) with the labels the head's loss takes, and notices."""
    tok, head = tm.tokenizer, tm.head
    pair = ex.pairs if ex.pairs is not None and head != "question answering" else None
    if head == "token classification":
        words = [t.split() for t in ex.texts]
        full = tok(words, is_split_into_words=True)["input_ids"]
        enc = tok(words, is_split_into_words=True, truncation=True, max_length=max_length, padding=True,
                  return_tensors="pt")
        labels = torch.full_like(enc["input_ids"], IGNORE)                                  # (N, T)
        for i, tags in enumerate(ex.labels):
            seen = set()
            for t, w in enumerate(enc.word_ids(i)):
                if w is not None and w not in seen:
                    labels[i, t] = tags[w]
                    seen.add(w)
        return dict(enc, labels=labels), _cut_notice([len(f) for f in full], max_length)
    if head == "question answering":
        return _encode_qa(tok, ex, max_length)
    full = tok(ex.texts, pair)["input_ids"]
    enc = dict(tok(ex.texts, pair, truncation=True, max_length=max_length, padding=True, return_tensors="pt"))
    notices = _cut_notice([len(f) for f in full], max_length)
    if head == "sequence classification":
        return dict(enc, labels=torch.tensor(ex.labels)), notices
    labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, IGNORE)              # (N, T)
    if head == "causal LM":
        return dict(enc, labels=labels), notices
    if tok.mask_token_id is None:
        raise UserError("This tokenizer has no mask token, so the masked-LM head cannot be scored.")
    special = torch.tensor([tok.get_special_tokens_mask(ids, already_has_special_tokens=True)
                            for ids in enc["input_ids"].tolist()]).bool() | (enc["attention_mask"] == 0)
    g = torch.Generator().manual_seed(MASK_SEED)
    hide = torch.zeros_like(special)
    for i in range(len(hide)):
        places = (~special[i]).nonzero().flatten()
        if len(places):
            pick = places[torch.randperm(len(places), generator=g)[:max(1, round(MASK_RATE * len(places)))]]
            hide[i, pick] = True
    ids = enc["input_ids"].masked_fill(hide, tok.mask_token_id)
    return dict(enc, input_ids=ids, labels=labels.masked_fill(~hide, IGNORE)), notices


def _encode_qa(tok, ex: Examples, max_length: int) -> tuple[dict, tuple[str, ...]]:
    """Question (text) and context (pair); the answer's first occurrence, as token start and end positions."""
    enc = tok(ex.texts, ex.pairs, truncation="only_second", max_length=max_length, padding=True,
              return_offsets_mapping=True, return_tensors="pt")
    starts, ends, lost = [], [], []
    for i, (context, answer) in enumerate(zip(ex.pairs, ex.labels)):
        a = context.index(answer)
        b = a + len(answer)
        seq, offsets = enc.sequence_ids(i), enc["offset_mapping"][i].tolist()
        inside = [t for t, s in enumerate(seq) if s == 1 and offsets[t][1] > a and offsets[t][0] < b]
        if not inside:
            lost.append(ex.rows[i])
        starts.append(inside[0] if inside else 0)
        ends.append(inside[-1] if inside else 0)
    enc.pop("offset_mapping")
    if lost:
        raise UserError(f"The answer falls beyond {max_length} tokens in rows {', '.join(map(str, lost[:5]))}: "
                        "raise the token limit or shorten those contexts.")
    return dict(enc, start_positions=torch.tensor(starts), end_positions=torch.tensor(ends)), ()


def batches(enc: dict, size: int, device: str) -> list[dict]:
    """One padded batch cut into batches of `size` rows, on `device`."""
    n = len(next(iter(enc.values())))
    return [{k: v[i:i + size].to(device) for k, v in enc.items()} for i in range(0, n, size)]


def chance(head: str, held: list[dict], context_tokens: list[int] | None = None) -> tuple[float, str]:
    """(the metric of a guess that ignores the input, what that guess is) on the held-out batches
    (question answering: from each context's length in tokens, n(n+1)/2 possible spans)."""
    if head == "question answering":
        return float(np.mean([2 / (n * (n + 1)) for n in context_tokens])), "a uniformly random span of the context"
    labels = [b["labels"][:, 1:] if head == "causal LM" else b["labels"] for b in held]
    gold = np.concatenate([lab[lab != IGNORE].cpu().numpy() for lab in labels])
    share = np.unique(gold, return_counts=True)[1] / len(gold)
    if head in ("masked LM", "causal LM"):
        return float(np.exp(-(share * np.log(share)).sum())), "each token guessed by its frequency in these rows"
    return float(share.max()), "always the most common label of these rows"


def build(tm: TaskModel, score: Examples, held: Examples, max_length: int, batch: int = 16) -> OwnTask:
    """The task on your rows: `score` rows give importance, `held` rows the metric."""
    s_enc, s_notes = encode(tm, score, max_length)
    h_enc, h_notes = encode(tm, held, max_length)
    held_batches = batches(h_enc, batch, tm.device)
    name, higher, _ = METRICS[tm.head]
    contexts = None
    if tm.head == "question answering":
        contexts = [max(1, min(len(ids), max_length)) for ids in
                    tm.tokenizer(held.pairs, add_special_tokens=False)["input_ids"]]
    level, note = chance(tm.head, held_batches, contexts)
    notices = tuple(dict.fromkeys(score.notices + s_notes + h_notes))
    return OwnTask(tm, batches(s_enc, batch, tm.device), held_batches, len(score), len(held), name, higher,
                   level, note, held, notices)

