"""What one patching pair is in a given model: its texts as ids, lined up token by token, its two answers as ids,
and the logits its metric reads, per family (Runner). The decoders' next token at the last position (a BERT-style
causal LM's too, its tokenizer's end mark left off), a classifier's class, a masked LM's token at its mask, an
encoder-decoder's first written token. Runs no patching (experiments.patching does) and keeps nothing.

    runner = Runner(model)                                   # UserError where the model predicts nothing to compare
    a, b, ia, iw = pair_ids(runner, clean, corrupt, answer, wrong)
    runner.logits(b.expand(n, -1))                           # (n, V) what the metric reads
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from analysis.tokens import readable_all
from limits.errors import UserError


class Runner:
    """One family's way from text to ids and from ids to the logits the metric reads, batched: (B, T) -> (B, V)."""

    def __init__(self, model) -> None:
        self.model = model
        self.metric = "logit difference at the last token"
        family, predicts = model.family, model.predicts
        if family == "encoder" and predicts == "class":  # models.hf.encoders.Encoder with its kept classifier
            if model.task_head != "sequence classification":
                raise UserError(f"This encoder's {model.task_head} head gives a class per token, and patching here "
                                "compares one answer for the whole text: load a sequence classifier or a masked LM.")
            self.kind, self.metric, self.head = "classifier", "class logit difference", model.task
        elif family == "encoder" and predicts == "target token":  # its kept masked-LM head, read at the mask
            self.kind, self.metric, self.head = "mlm", "logit difference at the mask", model.mlm
        elif family == "encoder" and model.writes:  # a BERT-style causal LM: its next token
            self.kind, self.head = "causal encoder", model.task
        elif family == "encoder" and (why := model.why_not_writing()):
            raise UserError(why)
        elif family == "decoder":
            if model.predicts == "class":
                raise UserError("Patching here reads a decoder's next-token logit or an encoder's classifier, and "
                                "this decoder's classifier is neither: load its causal LM or a BERT-style sequence "
                                "classifier, or pick 'gpt'.")
            if not model.lm:
                raise UserError("These weights hold no language-model head, so there is no next-token logit to "
                                "patch: load a folder saved from a *ForCausalLM model, or pick 'gpt'.")
            self.kind = "decoder"
        elif family == "encoder-decoder":
            self.kind, self.metric = "encdec", "logit difference of the first token written"
        elif family in ("tiny", "induction"):  # the decoders written here, read through their own net
            self.kind = "ours"
        elif family == "vision":
            raise UserError("Patching here swaps one text for another, and this model reads images: pick a text "
                            "model ('gpt', 'tiny', an hf: decoder, encoder-decoder or classifier).")
        elif family == "encoder" and model.task is not None:  # question answering
            raise UserError(f"Patching compares one answer for the whole text, and this encoder's {model.task_head} "
                            "head gives none it reads: load a sequence classifier or a masked LM, or pick a decoder "
                            "('gpt', 'tiny' or an hf: folder) or an encoder-decoder.")
        elif family == "encoder":
            raise UserError("Patching compares what a model predicts, and this encoder was loaded without a head "
                            "(no classifier, no masked-LM head in its weights): load a folder that keeps one, or "
                            "pick a decoder ('gpt', 'tiny' or an hf: folder) or an encoder-decoder.")
        else:
            raise UserError("Patching swaps one text's head outputs into another's, and this model's heads are not "
                            "read that way here: pick a decoder ('gpt', 'tiny' or an hf: folder), an "
                            "encoder-decoder, or an encoder with a classifier or masked-LM head.")

    def labels(self) -> list[str]:
        """A classifier's label names in id order (config.id2label)."""
        cfg = self.head.config
        return [str(cfg.id2label[i]) for i in range(cfg.num_labels)]

    def ids(self, text: str) -> torch.Tensor:
        """(1, T) token ids of text, or ValueError with one sentence."""
        if self.kind == "ours":
            ids = self.model.ids(text) if self.model.family == "induction" else _sorting_ids(text)
            return torch.as_tensor(ids, device=self.model.device).reshape(1, -1)  # (1, T)
        if self.kind == "decoder":
            return self.model.encode(text)[0]
        if self.kind == "causal encoder":  # what follows the text, not what follows the end mark ([SEP]) after it
            return self.model.prompt(text)[0]
        from models.hf.common import check_text
        enc = self.model.tokenizer(check_text(text), return_tensors="pt", truncation=True)
        ids = enc["input_ids"].to(self.model.device)                # (1, T)
        if self.kind == "mlm" and not (ids[0] == self.model.tokenizer.mask_token_id).any():
            raise UserError(f"A masked LM predicts the token at its mask: write {self.model.tokenizer.mask_token} "
                            "where the answer goes, at the same place in both texts.")
        return ids

    def tokens(self, ids: torch.Tensor) -> list[str]:
        if self.kind == "ours":
            return [self._vocab()[i] for i in ids[0].tolist()]
        return self.model.tokenizer.convert_ids_to_tokens(ids[0].tolist())

    def _vocab(self) -> Sequence[str]:
        from data.sorting import VOCAB

        return self.model.vocab if self.model.family == "induction" else VOCAB

    def index(self, token: str, what: str) -> int:
        """The id of one answer token (or class label), or ValueError saying what it splits into."""
        if self.kind == "classifier":
            labels = self.labels()
            if token.strip() in labels:
                return labels.index(token.strip())
            raise UserError(f"'{token}' is not one of this classifier's labels: {', '.join(labels)}.")
        if self.kind == "ours":
            vocab = list(self._vocab())
            if token in vocab:
                return vocab.index(token)
            raise UserError(f"The {what} '{token}' is not in this model's vocabulary: {' '.join(vocab)}.")
        tok = self.model.tokenizer
        ids = tok.encode(token, add_special_tokens=False)
        if tok.unk_token_id is not None and ids == [tok.unk_token_id] and token.strip() != tok.unk_token:
            raise UserError(f"The {what} '{token}' is not in this tokenizer's vocabulary, so it would be read as its "
                            f"unknown token {tok.unk_token}: give a word it knows.")
        if len(ids) == 1:
            return ids[0]
        known = tok.convert_tokens_to_ids(token)
        if isinstance(known, int) and known != tok.unk_token_id:
            return known
        pieces = tok.convert_ids_to_tokens(ids)
        first = next((p for p in pieces if p.strip()), pieces[0])  # not a bare space a character tokenizer splits off
        raise UserError(f"The {what} '{token}' is {len(ids)} tokens here ({', '.join(map(repr, pieces))}): give one "
                        f"token, e.g. {first!r} (mind the leading space).")

    def logits(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) -> (B, V) at the last position (decoders, a BERT-style causal LM) or the last mask (masked LM),
        (B, classes), or the first written token (encdec)."""
        m = self.model
        if self.kind == "ours":
            return m.net(ids)[0][:, -1]
        if self.kind == "decoder":
            return m.model(input_ids=ids).logits[:, -1]
        if self.kind == "classifier":
            return self.head(input_ids=ids).logits               # (B, classes)
        if self.kind == "causal encoder":
            return self.head(input_ids=ids).logits[:, -1]        # (B, V)
        if self.kind == "mlm":
            at = (ids[0] == m.tokenizer.mask_token_id).nonzero()[-1, 0]  # the last mask; both texts line up
            return self.head(input_ids=ids).logits[:, at]         # (B, V)
        start = torch.full((ids.shape[0], 1), m.start, dtype=ids.dtype, device=ids.device)  # (B, 1)
        return m.model(input_ids=ids, decoder_input_ids=start).logits[:, -1]


def _sorting_ids(text: str) -> list[int]:
    from data.sorting import encode

    return encode(text)


def _pair(runner: Runner, clean: str, corrupt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Both texts' ids, or ValueError naming the tokens that do not line up."""
    a, b = runner.ids(clean), runner.ids(corrupt)
    ta, tb = readable_all(runner.tokens(a)), readable_all(runner.tokens(b))
    if len(ta) != len(tb):
        k = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
        raise UserError(f"The clean text has {len(ta)} tokens and the corrupted text {len(tb)}: they must line up "
                        f"token by token. They part at token {k}: {' '.join(ta[k:k + 3]) or '(end)'} against "
                        f"{' '.join(tb[k:k + 3]) or '(end)'}; swap words for words of as many tokens.")
    if ta == tb:
        raise UserError("The clean and corrupted texts are the same: change a word or two in the corrupted one.")
    if runner.kind == "mlm":
        mask = runner.model.tokenizer.mask_token_id
        at = [(ids[0] == mask).nonzero()[:, 0].tolist() for ids in (a, b)]  # each text's mask positions
        if at[0] != at[1]:
            raise UserError(f"The clean text's mask is at token {at[0][-1]} and the corrupted text's at token "
                            f"{at[1][-1]}: put {runner.model.tokenizer.mask_token} at the same place in both, so "
                            "the answer is read at one position.")
    return a, b


def pair_ids(runner: Runner, clean, corrupt, answer, wrong) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """Both texts' ids and the two answers' ids, or ValueError with one sentence; runs no model."""
    a, b = _pair(runner, clean, corrupt)
    ia, iw = runner.index(answer, "answer"), runner.index(wrong, "wrong answer")
    if ia == iw:
        raise UserError("The answer and the wrong answer are the same token: pick two different ones.")
    return a, b, ia, iw
