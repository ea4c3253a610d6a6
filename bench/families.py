"""families: load and attend time of every Hugging Face family the app shows, at 128 tokens.

Each family is a tiny random model (bench.tiny_families: 2 layers × 4 heads, d_model 32, one character per
token) written to a temporary folder and loaded through models.load("hf:<folder>"), the path a user's folder
takes; the built-ins ('gpt', 'vit', 'seq2seq-transformer') are measured as well when their folders are there.
load_s: median of 3 loads (after a first one that imports the family's code); attend_s: median attend() over
128 tokens: encoders and decoders read 128 tokens, an encoder-decoder reads 128 and is fed a 128-token target
(teacher forcing: all three attentions at 128 × 128), a vision model reads a 24×24 image as 144 patches + [CLS].
So the figures measure the app's path (tokenising, the eager forward with attentions, copying them out) more
than the models' size. On one torch thread, as bench.kv: a shared machine's other jobs then slow it less.
quick: 32 tokens (a 12×12 image) and one run each.
Beside the timings, the count over every architecture transformers builds (bench.architectures: "tried", "exact",
"refused", "dla_ok", "patching_ok", "export_ok", out of "causal" causal LMs); quick: one Llama.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from bench.heads import median_s

TEXT = "the river bank was quiet in the morning and the old man sat on a wooden bench watching boats drift past "


def _text(model, n: int) -> str:
    """A text the model's tokenizer writes as exactly n tokens, specials included."""
    words = (TEXT * (1 + 4 * n // len(TEXT))).split(" ")
    tok = model.tokenizer
    lo, hi = 1, len(words)
    while lo < hi:  # the longest prefix of words with at most n tokens
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if len(tok(" ".join(words[:mid]))["input_ids"]) <= n else (lo, mid - 1)
    text = " ".join(words[:lo])
    pad = n - len(tok(text)["input_ids"])
    return text + "." * pad if pad >= 0 else text


def _attend(model, n: int):
    """A call of model.attend over n tokens (a vision model: over its own image size)."""
    if model.family == "vision":  # the image size is the model's: 24x24 (quick 12x12) for the tiny ones
        image = np.random.default_rng(0).integers(0, 17, model.size).astype(np.float32)
        return lambda: model.attend(image)
    text = _text(model, n)
    if model.family == "encoder-decoder":
        return lambda: model.attend(text, text)
    return lambda: model.attend(text)


def measure(quick: bool, reload: bool = True) -> dict:
    """reload=False: load_s is each model's first load, its modelling code's import included, not a second load
    (the smoke's: each model is loaded once)."""
    import torch

    from bench import architectures

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:  # the count over every architecture (bench.architectures) beside the hand-made families' timings
        return _measure(quick, reload) | architectures.measure(quick)
    finally:
        torch.set_num_threads(threads)


def _measure(quick: bool, reload: bool) -> dict:
    import models
    from bench.tiny_families import FAMILIES, write

    n, runs = (32, 1) if quick else (128, 3)
    out = {"tokens": n, "threads": 1, "models": "tiny random (2 layers x 4 heads, d_model 32), built-ins when present",
           "families": {}}
    with tempfile.TemporaryDirectory() as tmp:
        specs = {}
        for name, fam in FAMILIES.items():
            side = 12 if quick else 24
            specs[name] = "hf:" + str(write(name, Path(tmp) / name, image_size=side) if fam.kind == "vision"
                                      else write(name, Path(tmp) / name))
        specs |= {name: name for name in ("gpt", "vit", "seq2seq-transformer") if name in models.available()}
        for name, spec in specs.items():
            start = time.perf_counter()
            model = models.load(spec)  # the first load imports the family's modelling code
            load_s = median_s(lambda spec=spec: models.load(spec), runs) if reload else time.perf_counter() - start
            call = _attend(model, n)
            tr = call()
            out["families"][name] = {"family": model.family, "load_s": round(load_s, 4),
                                     "attend_s": round(median_s(call, runs), 4),
                                     "query_tokens": len(tr.tokens), "key_tokens": len(tr.key_tokens)}
    return out
