"""A tiny random GPT-2 with a word-level tokenizer that knows the names task's words, saved for models.load("hf:"):
built offline in a test (transformers GPT2Config, the tokenizers library's WordLevel), no download.

    folder = save(tmp_path)              # config.json, model.safetensors, tokenizer.json
    models.load("hf:" + folder)
"""
from __future__ import annotations

from pathlib import Path

from data.circuit_tasks import OBJECTS, PLACES, TEMPLATES

NAMES = ("Mary", "John", "Tom", "Anna", "Paul", "Kate")  # six of FIRST_NAMES; the others are unknown words here
SPECIALS = ("<unk>", "<|endoftext|>")


def words() -> list[str]:
    """Every word and punctuation mark of the templates, places, objects and NAMES, as Whitespace splits them."""
    from tokenizers.pre_tokenizers import Whitespace

    blanks = dict(a="", b="", s="", place="", obj="")
    text = " ".join([*(t.format(**blanks) for t in TEMPLATES), *PLACES, *OBJECTS, *NAMES])
    return sorted({w for w, _ in Whitespace().pre_tokenize_str(text)})


def tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate([*SPECIALS, *words()])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|endoftext|>",
                                   bos_token="<|endoftext|>", model_max_length=64)


def save(folder: Path, seed: int = 0) -> str:
    """The tiny GPT-2 (2 layers, 4 heads of 8) and its tokenizer, saved in `folder`; returns the folder."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = tokenizer()
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=4, n_inner=37,
                     bos_token_id=1, eos_token_id=1, initializer_range=0.3)
    GPT2LMHeadModel(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)
