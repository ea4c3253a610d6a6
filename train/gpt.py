"""Train the built-in `gpt` language models and write them to models/weights/<name>/ as Hugging Face folders.

    python -m train.gpt                    # gpt: every window starts with <s> (about 10 min, one thread)
    python -m train.gpt --variant sink     # gpt-sink: a dedicated learnable <sink> token at position 0
    python -m train.gpt --variant nobos    # gpt-nobos: windows at random offsets, nothing prepended
    python -m train.gpt --steps 50 --out /tmp/g   # a quick smoke run

The model is a standard `LlamaForCausalLM` built from a config (RoPE, grouped-query attention: 4 query
heads share 2 key/value heads), trained from scratch on the Python documentation (data/python_reference.py:
the language reference's training topics and the standard library's docstrings, 518 k tokens), tokenised
with the project's byte-level BPE (analysis.bpe) wrapped as a `PreTrainedTokenizerFast`. The three
variants share the tokenizer, the sizes, the seeds and the step count; they differ only in how a
training window is laid out (the attention-sinks page compares them):

    gpt        documents as "<s> text </s>" (Llama's convention); window = <s> + 127 tokens from a random
               offset, so <s> is at position 0 of every window and also starts documents inside windows
    gpt-sink   documents as "text </s>" (GPT-NeoX's); window = <sink> + 127 tokens (Xiao et al. 2023:
               a learnable token prepended to every training sample, and found nowhere else)
    gpt-nobos  documents as "text </s>"; window = 128 tokens from a random offset, nothing prepended

Afterwards it reloads the written folder with eager attention and measures, on every held-out window
(non-overlapping, laid out as in training): perplexity over the text tokens, and the mean attention mass
on position 0 over heads and over query positions 1.. (and over the later half, 64..), for the last layer
and for all layers. The figures go to <folder>/training.json (`--remeasure` measures an existing folder
again). Deterministic: one thread, fixed seeds, fixed step count; only the seconds change between runs.
"""
from __future__ import annotations

import json
import math
import random
import sys
import time
from pathlib import Path

import torch
from tokenizers import processors
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from analysis.bpe import train_bpe
from data import python_reference
from models import WEIGHTS
from models.gpt_windows import (  # the layout the runtime measures by too
    BOS,
    CONTEXT,
    EOS,
    PAD,
    SINK,
    VARIANTS,
    heldout_windows,
    labels,
    special_ids,
    stream,
    window,
)
from train import shipped_folder

BPE_VOCAB = 2048  # byte-level BPE before the 4 special tokens; about 3.6 characters per token here
SEED, BATCH, STEPS = 0, 16, 1600
LR, MIN_LR, WARMUP, WEIGHT_DECAY = 3e-3, 3e-4, 100, 0.1
SUBSET = 8  # held-out windows the tests recompute


def config(vocab_size: int, variant: str, ids: dict[str, int]) -> LlamaConfig:
    """4 layers x 4 query heads sharing 2 key/value heads, d_model 128: about 1.05 M parameters."""
    first = {"bos": ids[BOS], "sink": ids[SINK], "nobos": None}[variant]
    return LlamaConfig(
        vocab_size=vocab_size, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=CONTEXT,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True,
        bos_token_id=first, eos_token_id=ids[EOS], pad_token_id=ids[PAD],
    )


def tokenizer(variant: str) -> PreTrainedTokenizerFast:
    """The shared BPE with <pad> <s> </s> <sink> appended; the variant decides what encoding puts first:
    'The if statement' -> ['<s>', 'The', 'Ġif', 'Ġstatement'] for gpt, ['<sink>', 'The', ...] for gpt-sink."""
    tok = train_bpe(python_reference.documents("train"), BPE_VOCAB, "bytes")
    tok.add_special_tokens([PAD, BOS, EOS, SINK])
    first = {"bos": BOS, "sink": SINK, "nobos": None}[variant]
    if first is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{first} $A", pair=f"{first} $A $B", special_tokens=[(first, tok.token_to_id(first))])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=first, eos_token=EOS, pad_token=PAD, extra_special_tokens=[SINK],
        model_max_length=CONTEXT,
    )


@torch.no_grad()
def measure(model, x: torch.Tensor, ids: dict[str, int]) -> dict:
    """Perplexity over text tokens and attention mass on position 0, averaged over heads and over query
    positions 1.. ("first_token_mass_*") or over the later half, 64.. ("late_first_token_mass_*")."""
    nll, count, mass, late = 0.0, 0, [], []
    for batch in x.split(16):
        out = model(input_ids=batch, output_attentions=True)
        y = labels(batch, ids)[:, 1:]                                          # (B, T-1)
        logp = torch.log_softmax(out.logits[:, :-1].float(), dim=-1)          # (B, T-1, V)
        keep = y != -100
        nll -= logp.gather(-1, y.clamp(min=0)[..., None])[..., 0][keep].sum().item()
        count += keep.sum().item()
        att = torch.stack(out.attentions, dim=1)                              # (B, L, H, T, T)
        mass.append(att[..., 1:, 0].mean(dim=(2, 3)))                         # (B, L)
        late.append(att[..., CONTEXT // 2:, 0].mean(dim=(2, 3)))              # (B, L)
    mass, late = torch.cat(mass).mean(dim=0), torch.cat(late).mean(dim=0)     # (L,)
    return {
        "perplexity": round(math.exp(nll / count), 4),
        "tokens": count,
        "first_token_mass_last_layer": round(mass[-1].item(), 4),
        "first_token_mass_all_layers": round(mass.mean().item(), 4),
        "first_token_mass_per_layer": [round(m, 4) for m in mass.tolist()],
        "late_first_token_mass_last_layer": round(late[-1].item(), 4),
        "late_first_token_mass_all_layers": round(late.mean().item(), 4),
    }


def uniform_mass(first_query: int) -> float:
    """Mass on position 0 if every query from `first_query` on attended uniformly: 1 -> 0.0349, 64 -> 0.0108"""
    return round(sum(1 / (i + 1) for i in range(first_query, CONTEXT)) / (CONTEXT - first_query), 4)


def evaluate(folder: Path, variant: str) -> dict:
    """Held-out figures of a written folder, loaded as a user would load it (eager attention)."""
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(folder)
    ids, held = special_ids(tok), heldout_windows(tok, variant)
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "heldout": measure(model, held, ids),
        "subset": {"windows": SUBSET, **measure(model, held[:SUBSET], ids)},
        "uniform_first_token_mass": uniform_mass(1),
        "uniform_late_first_token_mass": uniform_mass(CONTEXT // 2),
    }


def lr_at(step: int, steps: int) -> float:
    """Linear warm-up, then cosine decay from LR to MIN_LR."""
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    progress = (step - WARMUP) / max(1, steps - WARMUP)
    return MIN_LR + 0.5 * (LR - MIN_LR) * (1 + math.cos(math.pi * progress))


def train(variant: str, steps: int, out: Path, eval_every: int) -> dict:
    start = time.time()
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    tok = tokenizer(variant)
    ids = special_ids(tok)
    train_docs = python_reference.documents("train")
    rng.shuffle(train_docs)
    tokens = stream(tok, variant, train_docs)
    held = heldout_windows(tok, variant)
    model = LlamaForCausalLM(config(len(tok), variant, ids))
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.95))
    print(f"{VARIANTS[variant]}: {sum(p.numel() for p in model.parameters()):,} parameters, "
          f"{len(tokens):,} training tokens, {held.shape[0]} held-out windows", flush=True)
    for step in range(steps):
        x = torch.tensor([window(tokens, rng.randrange(len(tokens) - CONTEXT), variant, ids)
                          for _ in range(BATCH)])                              # (B, T)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps)
        model.train()
        loss = model(input_ids=x, labels=labels(x, ids)).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if eval_every and ((step + 1) % eval_every == 0 or step + 1 == steps):
            model.eval()
            with torch.no_grad():
                held_loss = model(input_ids=held[:32], labels=labels(held[:32], ids)).loss.item()
            print(f"step {step + 1} loss {loss.item():.3f} held-out {held_loss:.3f} "
                  f"{time.time() - start:.0f}s", flush=True)
    trained = time.time() - start
    model.save_pretrained(out)  # transformers 5 writes model.safetensors only
    tok.save_pretrained(out)
    figures = {
        "model": VARIANTS[variant], "variant": variant,
        "first_token": {"bos": BOS, "sink": SINK, "nobos": None}[variant],
        "corpus": "data/python_reference.py: Python 3.11.7 reference topics and docstrings (PSF licence)",
        "training_tokens": len(tokens), "steps": steps, "batch": BATCH, "context": CONTEXT, "seed": SEED,
        **evaluate(out, variant),
        "train_seconds": round(trained),
    }
    return shipped_folder.write_figures(out, figures, start)


def main(argv: list[str]) -> None:
    parser = shipped_folder.parser(__doc__, STEPS, "models/weights/<name>")
    parser.add_argument("--variant", choices=list(VARIANTS), default="bos")
    parser.add_argument("--eval-every", type=int, default=200, help="print held-out loss every N steps (0: never)")
    parser.add_argument("--remeasure", action="store_true",
                        help="train nothing: measure the existing folder again and update its training.json")
    args = parser.parse_args(argv)
    out = args.out or WEIGHTS / VARIANTS[args.variant]
    if args.remeasure:
        torch.set_num_threads(1)
        figures = json.loads((out / "training.json").read_text()) | evaluate(out, args.variant)
        shipped_folder.write_figures(out, figures)
        print(json.dumps(figures, indent=1))
        return
    shipped_folder.make_room(out, args.overwrite)
    torch.set_num_threads(1)
    figures = train(args.variant, args.steps, out, args.eval_every)
    print(json.dumps(figures, indent=1))
    print(f"{figures['model']}: wrote {out} in {figures['seconds']} s")


if __name__ == "__main__":
    main(sys.argv[1:])
