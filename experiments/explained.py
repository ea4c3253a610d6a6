"""What an attribution explains: one number per model, written as a function of the word embeddings.

    ex = explain(model, "the film was not good")      # models.load("hf:<a classifier folder>"), its head kept
    ex.what   -> "the logit of class 'negative' (the model's prediction)"
    ex.score(ex.embeds())  -> tensor([3.1])             # (B,) the explained number at these embeddings

- a sequence classifier (a model whose `predicts` is "class", with that head): the logit of the target class (default:
  the predicted one);
  faithfulness measures its probability, as ERASER does.
- a decoder with a language-model head (models.hf.decoders.Decoder): the logit of the target next token at the
  last position (default: the greedy one); faithfulness measures its probability.
- an encoder without a head (the packaged MiniLM, a sentence-embedding model): the cosine similarity of the text's
  mean-pooled embedding to the second text's (held fixed). Without a second text: the length of the text's
  embedding along its own direction (held fixed), i.e. how much each token builds the embedding as it is.
The embeddings are the model's own word embeddings (`inputs_embeds`); positions and segments are added by the
model. Does not: change train/eval mode, register hooks, or leave gradients on parameters (callers take
torch.autograd.grad with respect to the embeddings only). Models without such a prediction get ValueError.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from limits.errors import UserError

NO_PREDICTION = ("Attribution explains one prediction: a sequence classifier's class (an hf: folder with a "
                 "…ForSequenceClassification head), a decoder's next token, or the built-in MiniLM's similarity of "
                 "the text to the second text; this model has none of these.")
TOO_SHORT = "Attribution compares tokens: type a text of at least two tokens (special tokens aside)."


@dataclass
class Explained:
    kind: str                     # "class", "next token", "similarity" or "self"
    net: torch.nn.Module          # the transformers module that takes inputs_embeds
    tokens: list[str]
    ids: torch.Tensor             # (1, T)
    types: torch.Tensor | None    # (1, T) token type ids, or None where the model has none
    special: np.ndarray           # bool [T]: tokens never removed nor ranked ([CLS], [SEP], <s>)
    target: str                   # what is explained, in a few words: "negative", "' the'", "cosine to text 2"
    what: str                     # one sentence: what the number is
    source: int                   # the attention row read: [CLS] (0) or the predicting position (T - 1)
    pad_id: int
    target_id: int = 0            # class or token id (classifier, decoder)
    anchor: torch.Tensor | None = None  # (D,) the fixed embedding compared with (similarity, self)

    def embeds(self, ids: torch.Tensor | None = None) -> torch.Tensor:
        """The word embeddings of ids (default: the text's), (B, T, D), detached."""
        with torch.no_grad():
            return self.net.get_input_embeddings()(self.ids if ids is None else ids).detach()

    def score(self, embeds: torch.Tensor, mask: torch.Tensor | None = None, types: torch.Tensor | None = None,
              prob: bool = False) -> torch.Tensor:
        """The explained number for each row of embeds (B, T, D) -> (B,); prob: the class's or token's probability
        instead of its logit (a similarity stays itself)."""
        b, t = embeds.shape[:2]
        mask = torch.ones(b, t, dtype=torch.long, device=embeds.device) if mask is None else mask  # (B, T)
        extra = {}
        if self.types is not None:
            extra["token_type_ids"] = (self.types.expand(b, t) if types is None else types)         # (B, T)
        if self.kind == "class":
            logits = self.net(inputs_embeds=embeds, attention_mask=mask, **extra).logits            # (B, C)
            z = logits.float().log_softmax(-1).exp() if prob else logits.float()
            return z[:, self.target_id]
        if self.kind == "next token":
            logits = self.net(inputs_embeds=embeds, attention_mask=mask).logits                     # (B, T, V)
            last = logits[torch.arange(b), mask.sum(1) - 1].float()                                  # (B, V)
            return (last.softmax(-1) if prob else last)[:, self.target_id]
        h = self.net(inputs_embeds=embeds, attention_mask=mask, **extra).last_hidden_state.float()  # (B, T, D)
        m = mask[..., None].float()                                                                  # (B, T, 1)
        e = (h * m).sum(1) / m.sum(1)                                                                # (B, D)
        if self.kind == "similarity":
            return F.cosine_similarity(e, self.anchor[None], dim=-1)
        return e @ F.normalize(self.anchor, dim=0)

    @torch.no_grad()
    def values(self, keeps: list[np.ndarray], prob: bool = False, batch: int = 64) -> np.ndarray:
        """The number with only the tokens at each index array kept (the others deleted, not replaced) -> [N]."""
        out = []
        ids, types = self.ids[0], None if self.types is None else self.types[0]
        for start in range(0, len(keeps), batch):
            part = keeps[start:start + batch]
            width = max(len(k) for k in part)
            pad = torch.full((len(part), width), self.pad_id, dtype=ids.dtype, device=ids.device)   # (B, W)
            mask, ty = torch.zeros_like(pad), torch.zeros_like(pad)
            for i, k in enumerate(part):
                k = torch.as_tensor(k, dtype=torch.long, device=ids.device)
                pad[i, :len(k)], mask[i, :len(k)] = ids[k], 1
                if types is not None:
                    ty[i, :len(k)] = types[k]
            out.append(self.score(self.embeds(pad), mask, ty if types is not None else None, prob).cpu().numpy())
        return np.concatenate(out).astype(np.float64)

    @torch.no_grad()
    def attention(self) -> np.ndarray:
        """The model's own attention on the text, float32 [layers, heads, T, T]."""
        from models.hf.common import self_attentions

        extra = {} if self.types is None else {"token_type_ids": self.types}
        attentions = self_attentions(self.net, input_ids=self.ids, **extra)  # a hybrid's: the layers that attend
        return torch.stack(attentions, dim=1)[0].float().cpu().numpy()  # (L, H, T, T)


def _special(tokenizer, ids: list[int]) -> np.ndarray:
    return np.array(tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True), bool)


def _pad(tokenizer) -> int:
    for t in (tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.eos_token_id):
        if t is not None:
            return int(t)
    return 0


def _pooled(net, enc: dict) -> torch.Tensor:
    h = net(**enc).last_hidden_state.float()                  # (1, T, D)
    m = enc["attention_mask"][..., None].float()              # (1, T, 1)
    return ((h * m).sum(1) / m.sum(1))[0]                     # (D,)


def _pick(target, names: list[str], default: int, what: str) -> int:
    """A target given as an index or a name -> its index; None -> default."""
    if target is None:
        return default
    if isinstance(target, int | np.integer) and 0 <= int(target) < len(names):
        return int(target)
    if str(target) in names:
        return names.index(str(target))
    raise UserError(f"'{target}' is not {what}: choose one of {', '.join(names[:20])}.")


@torch.no_grad()
def explain(model, text: str, target=None, text_b: str | None = None) -> Explained:
    """The number to explain for this model and text (see the module docstring), or ValueError with one sentence."""
    from models.hf.common import check_text

    text = check_text(text)
    text_b = text_b.strip() if text_b and text_b.strip() else None
    family = model.family
    if model.predicts == "class":  # the classifier a folder was fine-tuned with, kept by models.load
        if model.task_head != "sequence classification":
            raise UserError(NO_PREDICTION)
        tok, net = model.tokenizer, model.task
        labels = [str(net.config.id2label[i]) for i in range(net.config.num_labels)]
        enc = tok(text, text_b, truncation=True, max_length=min(512, tok.model_max_length or 512), return_tensors="pt")
        enc = {k: v.to(model.device) for k, v in enc.items()}
        logits = net(**enc).logits[0]                           # (C,)
        t = _pick(target, labels, int(logits.argmax()), "one of this classifier's labels")
        kind, name = "class", labels[t]
        what = f"the logit of class '{name}'" + (" (the model's prediction)" if target is None else "")
    elif family == "decoder" and model.predicts == "next token":
        tok, net = model.tokenizer, model.model
        ids, _ = model.encode(text)
        enc = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        logits = net(input_ids=ids).logits[0, -1]               # (V,)
        if target is None or isinstance(target, int | np.integer):
            t = int(logits.argmax()) if target is None else int(target)
        else:
            found = tok(str(target), add_special_tokens=False)["input_ids"]
            if not found:
                raise UserError(f"'{target}' makes no token for this decoder: give a word or a token.")
            t = found[0]
        kind, name = "next token", repr(tok.decode([t]))
        what = f"the logit of the next token {name}" + (" (the greedy choice)" if target is None else "")
    elif family == "encoder":
        tok, net = model.tokenizer, model.model
        enc, _ = model.encode(text)
        if text_b:
            anchor = _pooled(net, model.encode(text_b)[0])
            kind, name, what = "similarity", "cosine to text 2", "the cosine similarity of the text's mean-pooled " \
                "embedding to the second text's (held fixed)"
        else:
            anchor = _pooled(net, enc)
            kind, name, what = "self", "embedding length", "with no second text: the length of the text's " \
                "mean-pooled embedding along its own direction (held fixed), how much each token builds it"
        kept = model.task_head  # a head no attribution here reads: question answering, causal LM
        if kept and model.predicts is None:
            what = f"{what} (this folder's {kept} head is not explained here: its encoder is)"
        t = 0
    else:
        raise UserError(NO_PREDICTION)
    ids = enc["input_ids"][:, :]                                # (1, T)
    special = _special(tok, ids[0].tolist())
    if (~special).sum() < 2:
        raise UserError(TOO_SHORT)
    types = enc.get("token_type_ids") if kind != "next token" else None
    source = ids.shape[1] - 1 if kind == "next token" else 0
    return Explained(kind=kind, net=net, tokens=tok.convert_ids_to_tokens(ids[0].tolist()), ids=ids, types=types,
                     special=special, target=name, what=what, source=source, pad_id=_pad(tok), target_id=t,
                     anchor=anchor if kind in ("similarity", "self") else None)
