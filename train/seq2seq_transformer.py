"""Train the built-in `seq2seq-transformer` on the dates task; write models/weights/seq2seq-transformer/.

    python -m train.seq2seq_transformer                       # a few minutes on one thread
    python -m train.seq2seq_transformer --steps 50 --out /tmp/s   # a quick smoke run

The model is a standard `MarianMTModel` built from a config: the encoder-decoder of Vaswani et al.
2017 as Hugging Face writes it (post-layer-norm blocks, fixed sinusoidal positions, embeddings scaled
by sqrt(d_model), one embedding table shared by encoder, decoder and output). Marian rather than BART
or T5 for that reason: BART learns its positions (with an offset of 2) and starts decoding from
</s>, T5 has no absolute positions at all (a learned bias per relative distance) and pre-norm RMS
blocks, while Marian is the architecture the app's positional-encoding and seq2seq pages describe.
2 encoder and 2 decoder layers x 4 heads, d_model 64.

It reads a written date and writes it in ISO 8601 ('Tuesday, March 3rd, 2026' -> '2026-03-03'),
one character per token with a `tokenizers` WordLevel tokenizer saved in the folder (lower-cased:
the task's alphabet is data/dates.py's CHARS plus '-'; anything else is <unk>). Each step draws
fresh dates from the training split; the held-out dates are 1,000 days the training split never
has (split by calendar day), the same 1,000 written dates the recurrent date models are scored on.
Afterwards it scores greedy decoding and beam search (width 4) through the saved folder and writes
<folder>/training.json. Deterministic: one thread, fixed seeds, fixed step count.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import torch
from tokenizers import (
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
)
from transformers import (
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    MarianConfig,
    MarianMTModel,
    PreTrainedTokenizerFast,
)

from data import dates
from models import WEIGHTS
from train import shipped_folder

NAME = "seq2seq-transformer"
PAD, EOS, UNK = "<pad>", "</s>", "<unk>"
ALPHABET = dates.CHARS + "-"
SEED, BATCH, STEPS, LR, WARMUP, WEIGHT_DECAY = 0, 64, 3000, 2e-3, 200, 0.01
HELDOUT_N, HELDOUT_SEED, SUBSET, BEAMS, MAX_NEW = 1000, 2, 100, 4, 12


def tokenizer() -> PreTrainedTokenizerFast:
    """One token per character, lower-cased, '</s>' appended: 'Mar 3' -> ['m', 'a', 'r', ' ', '3', '</s>']"""
    vocab = {tok: i for i, tok in enumerate([PAD, EOS, UNK, *ALPHABET])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, vocab[EOS])])
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=UNK,
                                   model_max_length=dates.MAX_LEN + 1)


def config(tok: PreTrainedTokenizerFast) -> MarianConfig:
    """2 + 2 layers x 4 heads, d_model 64, feed-forward 256: about 240 k parameters (8 k of them fixed sinusoids)."""
    return MarianConfig(
        vocab_size=len(tok), decoder_vocab_size=len(tok), d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256,
        max_position_embeddings=64, scale_embedding=True, dropout=0.1, attention_dropout=0.0,
        activation_function="relu", pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.pad_token_id, forced_eos_token_id=None,
    )


def batch(tok: PreTrainedTokenizerFast, pairs: list[tuple[str, str]]) -> dict[str, torch.Tensor]:
    """Inputs, attention mask and labels (padding -100) for a list of (written, iso) pairs."""
    enc = tok([s for s, _ in pairs], text_target=[t for _, t in pairs], padding=True, return_tensors="pt")
    enc["labels"][enc["labels"] == tok.pad_token_id] = -100
    return enc


@torch.no_grad()
def exact(model, tok, pairs: list[tuple[str, str]], beams: int = 1, size: int = 250) -> float:
    """Fraction of written dates decoded to exactly the right ISO date (greedy, or beam search of width `beams`)."""
    right = 0
    for i in range(0, len(pairs), size):
        chunk = pairs[i:i + size]
        enc = tok([s for s, _ in chunk], padding=True, return_tensors="pt")
        search = {"num_beams": beams, "early_stopping": True} if beams > 1 else {"num_beams": 1}
        ids = model.generate(**enc, **search, do_sample=False, max_new_tokens=MAX_NEW)
        right += sum(p == t for p, (_, t) in zip(tok.batch_decode(ids, skip_special_tokens=True), chunk))
    return right / len(pairs)


def heldout() -> list[tuple[str, str]]:
    """The 1,000 held-out (written, iso) pairs, as the recurrent date models are scored on them (mixed case)."""
    return dates.dataset(HELDOUT_N, HELDOUT_SEED, "test")


def train(steps: int, out: Path) -> dict:
    start = time.time()
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    tok = tokenizer()
    model = MarianMTModel(config(tok))
    trainable = [p for n, p in model.named_parameters() if "embed_positions" not in n]  # sinusoids stay fixed
    print(f"{NAME}: {sum(p.numel() for p in model.parameters()):,} parameters", flush=True)
    model.train()
    shipped_folder.steps_of_adamw(
        trainable, steps, lambda step: model(**batch(tok, [dates.sample(rng, "train") for _ in range(BATCH)])).loss,
        lr=LR, weight_decay=WEIGHT_DECAY, warmup=WARMUP, start=start, clip=1.0)
    trained = time.time() - start
    model.save_pretrained(out)  # transformers 5 writes model.safetensors only
    tok.save_pretrained(out)
    shipped = AutoModelForSeq2SeqLM.from_pretrained(out, attn_implementation="eager").eval()
    saved_tok = AutoTokenizer.from_pretrained(out)
    test = heldout()
    figures = {
        "model": NAME, "parameters": sum(p.numel() for p in shipped.parameters()),
        "data": "data/dates.py: fresh training-split dates each step; held out: dataset(1000, seed=2, 'test')",
        "steps": steps, "batch": BATCH, "seed": SEED,
        "heldout": {"n": len(test), "greedy_exact": exact(shipped, saved_tok, test),
                    "beam_exact": exact(shipped, saved_tok, test, BEAMS), "beams": BEAMS},
        "subset": {"n": SUBSET, "greedy_exact": exact(shipped, saved_tok, test[:SUBSET]),
                   "beam_exact": exact(shipped, saved_tok, test[:SUBSET], BEAMS)},
        "train_seconds": round(trained),
    }
    return shipped_folder.write_figures(out, figures, start)


def main(argv: list[str]) -> None:
    shipped_folder.main(__doc__, NAME, STEPS, train, argv, WEIGHTS)


if __name__ == "__main__":
    main(sys.argv[1:])
