"""quantization: what each precision variant (models.variants) costs and saves, for MiniLM, the tiny decoder, and
the built-in gpt and vit.

Per model and variant: bytes (the nn.Linear weights, scales and zero points included: the part
quantization touches), model_bytes (every parameter and buffer), seconds (median per forward over
interleaved runs after a warm-up: MiniLM batch 16 × 128 tokens, tiny 16 × 21 tokens, quick: batch 4; on
CPU with one thread, as pruning_bert, so another process's load hits every variant alike), max_js and
mean_js (Jensen-Shannon divergence in bits of the attention rows from fp32: the largest over every head
and row, and the mean over heads of each head's mean, averaged over texts; MiniLM: 16 held-out paraphrase
sentences, tiny: 16 held-out digit strings), top1_agreement with fp32 and metric (MiniLM: the same
retrieved paraphrase and retrieval accuracy on held-out pairs with scrambled distractors; tiny: the same
next token at every answer position and exact match on held-out strings; gpt: the same next token and perplexity
on 8 held-out windows of 128 tokens of the Python reference, attention on the 8 held-out topics' first 400
characters, latency batch 8 (quick: 4) × 128 tokens; vit: the same class and accuracy on the 450 held-out digits,
attention on 16 of them, latency batch 16 (quick: 4) images). Also per variant: cosine (of
the outputs with fp32's) and max_weight_change (the largest single attention weight moved). Beside the
models: "targets" checks the issue's two (and sets torch.ao's int8, int8_ao, beside torchao's per-channel int8:
speed-up over fp32 and top-1 agreement), "input" says what was measured. quick: fewer items and runs.
"""
from __future__ import annotations

import numpy as np
import torch

PTQ = ["fp32", "fp16", "bf16", "int8_dynamic", "int8_ao", "int8_per_tensor", "int4_weight_only"]
INT8_PATHS = ("int8_dynamic", "int8_ao")  # the most faithful int8 here, and torch.ao's fastest
KEYS = {"tiny": [*PTQ, "int8_qat"], "bert": PTQ, "gpt": [*PTQ, "int8_qat"], "vit": PTQ}


def _inputs(name: str, m) -> list:
    """The held-out inputs whose attention each variant is compared on."""
    from data import digits, python_reference
    from data.paraphrases import load_pairs
    from data.sorting import held_out

    if name == "bert":
        return [a for a, _ in load_pairs()[-16:]]
    if name == "gpt":
        return [text[:400] for text in python_reference.split("test").values()]
    if name == "vit":
        images = digits.load()[0]
        return [images[i] / digits.INK * m.pixel_max for i in digits.split()[1][:16]]
    return held_out(16)


def _model(name: str, quick: bool, runs: int, items: int | None = None) -> tuple[dict, str]:
    from experiments import precision
    from models import load, variants

    m = load(name, "cpu")
    n_items = {"bert": 30 if quick else 80, "tiny": 200 if quick else 2000, "gpt": 0, "vit": 450}[name]
    n_items = min(n_items, items) if items else n_items
    probe = precision.probe_for(m, "", n_items, batch=4 if quick else 16, name=name)
    texts = _inputs(name, m)[:items] if items else _inputs(name, m)  # items: the smoke's few texts, as few rows
    made = {k: variants.make(m, k, name) for k in KEYS[name]}
    fell_back = [k for k, v in made.items() if v.variant != k]
    if fell_back:
        raise RuntimeError(f"{fell_back} fell back to fp32: {[made[k].notices for k in fell_back]}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = precision.measure(m, made, probe, runs)
    finally:
        torch.set_num_threads(threads)
    refs = [m.attend(t) for t in texts]
    out = {}
    for key, v in made.items():
        compared = [precision.compare_variant(ref, v, t) for ref, t in zip(refs, texts)]
        out[key] = {
            "bytes": variants.linear_bytes(v), "model_bytes": variants.model_bytes(v),
            "seconds": round(rows[key]["seconds"], 5),
            "max_js": float(f"{max(float(c['max_js'].max()) for c in compared):.3e}"),
            "mean_js": float(f"{np.mean([c['mean_js'].mean() for c in compared]):.3e}"),
            "top1_agreement": round(rows[key]["top1_agreement"], 4), "metric": round(rows[key]["metric"], 4),
            "cosine": round(rows[key]["cosine"], 5),
            "max_weight_change": round(max(c["max_change"] for c in compared), 4),
        }
    return out, (f"{name}: {probe.metric_name.lower()} on {probe.about}; latency {probe.timing}, median of {runs} "
                 f"interleaved runs, cpu, 1 thread; attention over {len(texts)} held-out "
                 f"{'digits' if name == 'vit' else 'texts'}")


def measure(quick: bool, items: int | None = None, only: tuple[str, ...] | None = None) -> dict:
    """items: at most this many held-out items and attention texts per model (default: quick's or the full counts,
    16 texts); only: these models
    alone (then without the targets, which compare models)."""
    runs = 1 if quick else 3
    measured = {}
    for name in only or KEYS:
        measured[name] = _model(name, quick, runs, items)
        print(name, measured[name][0], flush=True)
    res = {name: rows for name, (rows, _) in measured.items()}
    if only:
        return res | {"input": "; ".join(about for _, about in measured.values())}
    bert, tiny = res["bert"], res["tiny"]
    ratio = bert["int8_dynamic"]["bytes"] / bert["fp32"]["bytes"]
    res["targets"] = {
        "bert_int8_bytes_over_fp32": round(ratio, 4),
        "bert_int8_top1": bert["int8_dynamic"]["top1_agreement"],
        "bert_int8_ok": ratio <= 0.35 and bert["int8_dynamic"]["top1_agreement"] >= 0.95,
        "tiny_qat_at_least_ptq": tiny["int8_qat"]["metric"] >= tiny["int8_dynamic"]["metric"],
        "gpt_qat_perplexity_at_most_ptq": res["gpt"]["int8_qat"]["metric"] <= res["gpt"]["int8_dynamic"]["metric"],
        "bert_int8_paths_speedup": {k: round(bert["fp32"]["seconds"] / bert[k]["seconds"], 2) for k in INT8_PATHS},
        "bert_int8_paths_top1": {k: bert[k]["top1_agreement"] for k in INT8_PATHS},
    }
    res["input"] = "; ".join(about for _, about in measured.values())
    return res
