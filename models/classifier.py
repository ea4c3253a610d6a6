"""A small BERT sentiment classifier trained on generated reviews (data/reviews.py), saved as a folder.

    make_classifier("/tmp/clf")                                          # 2 layers x 4 heads, a few seconds
    make_classifier("/tmp/clf", layers=4, heads=8, hidden=128, steps=400)   # the benchmark's

The folder is what a user's fine-tuned model looks like: config.json (BertForSequenceClassification,
id2label), model.safetensors and a tokenizer (tokenizer.json), the tokenizer built offline with the
`tokenizers` library as a word-level vocabulary of the generator's words. Deterministic for a seed, a
thread count and a CPU's kernels (an AVX-512 machine trains other weights than an AVX2 one). The app never
loads it by name: `python -m train.classifier` writes the 2 x 4 one to models/weights/classifier/, which the
tests load as a user's folder; the benchmark trains its bigger one.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from data import reviews

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def tokenizer():
    """A word-level fast tokenizer over reviews.WORDS with BERT's special tokens and [CLS] A [SEP] B [SEP]."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIALS + tuple(reviews.WORDS))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=64)


def make_classifier(folder: str, layers: int = 2, heads: int = 4, hidden: int = 32, steps: int = 300,
                    batch: int = 32, lr: float = 3e-3, seed: int = 0):
    """Train on freshly generated rows (seed + 1000 onwards, apart from data a caller draws with small seeds),
    save to `folder`; returns (model, tokenizer)."""
    from transformers import BertConfig, BertForSequenceClassification

    tok = tokenizer()
    cfg = BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=2 * hidden, max_position_embeddings=64, num_labels=len(reviews.LABELS),
                     id2label=dict(enumerate(reviews.LABELS)), label2id={k: i for i, k in enumerate(reviews.LABELS)},
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager")
    torch.manual_seed(seed)
    model = BertForSequenceClassification(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for step in range(steps):
        data = reviews.rows(batch, seed=1000 + seed * steps + step)
        enc = tok([r["text"] for r in data], padding=True, return_tensors="pt")
        y = torch.tensor([reviews.LABELS.index(r["label"]) for r in data])
        loss = F.cross_entropy(model(**enc).logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    return model, tok
