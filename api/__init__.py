"""Attention Explorer as a library: what the views compute, for a notebook or a script, as numpy arrays and pandas
DataFrames. These names are the stable import path (the modules they call may move between releases):

    import api
    m = api.load("bert")                                  # any registry key or "hf:<folder>"
    t = api.attend(m, "The river bank was dirty")         # AttentionTrace: .tokens, .weights [L, H, T, T]
    api.heads(t)                                          # DataFrame: a row per head, behaviour scores and label
    api.rollout(t), api.flow(t)                           # [T, T] arrays (Abnar & Zuidema 2020)
    api.corpus(m, sentences)                              # DataFrame: a row per head, behaviours over the corpus
    api.next_token(m, "for i in range(10):")              # DataFrame of the logit's parts (head, MLP, ...)
    api.patching(m, clean, corrupt, answer, wrong)        # DataFrame: restored fraction per head
    api.circuit(m, [(clean, corrupt, answer, wrong), ...])  # DataFrame: a row per edge, largest |score| first
    api.importance(m, text)                               # DataFrame: gradient importance per head, on a task
    api.attribution(m, text), api.faithfulness(m, texts)  # DataFrames: token scores per method; ERASER AOPC
    api.export_pruned(m, {0: [1, 2]}, "out/")             # a pruned copy that transformers alone loads
    api.kv_cache(layers=4, new_tokens=128)                # the KV cache view's live timing, with and without

    api.figures.heads(t), api.figures.dla(parts), ...     # the views' plotly figures of these results (api/figures.py)
    api.head_view(t), api.model_view(t)                   # bertviz's views, offline, for a notebook (api/show.py)
    api.save(figure_or_view, "out.html" | ".png" | ".svg")

Each call runs the model (nothing is cached here: wrap calls in functools.cache as you like); errors a user can fix
are ValueError with one sentence, as in the app. This module does not draw and imports neither streamlit nor plotly:
figures, head_view, model_view and save are loaded on first use (viz/ draws them, as in the app).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis import patterns
from analysis.flow import attention_flow
from analysis.rollout import rollout as _rollout
from analysis.trace import AttentionTrace
from limits.errors import UserError

__all__ = ["load", "attend", "heads", "rollout", "flow", "corpus", "next_token", "patching", "circuit", "importance",
           "attribution", "faithfulness", "export_pruned", "kv_cache", "figures", "head_view", "model_view", "save"]
_DRAWN = {"figures": "api.figures", "head_view": "api.show", "model_view": "api.show", "save": "api.show"}


def __getattr__(name: str):
    """api.figures, api.head_view, api.model_view and api.save, imported on first use (they bring plotly)."""
    if name not in _DRAWN:
        raise AttributeError(f"module 'api' has no attribute '{name}'")
    import importlib

    module = importlib.import_module(_DRAWN[name])
    return module if name == "figures" else getattr(module, name)


def load(name: str, device: str = "cpu", dtype: str = "float32"):
    """A model by registry key ("bert", "gpt", "tiny", "induction", ...) or "hf:<folder or hub id>"."""
    import models

    return models.load(name, device, dtype)


def attend(model, text: str, text_b: str | None = None) -> AttentionTrace:
    """The model's attention on `text` (a second text for sentence pairs or a decoder's target)."""
    return model.attend(text, text_b) if text_b else model.attend(text)


def _per_head(tables: dict[str, np.ndarray]) -> pd.DataFrame:
    """{name: [L, H]} -> DataFrame with layer, head and a column per name."""
    n_layers, n_heads = next(iter(tables.values())).shape
    layer, head = np.divmod(np.arange(n_layers * n_heads), n_heads)
    return pd.DataFrame({"layer": layer, "head": head, **{k: np.asarray(v).ravel() for k, v in tables.items()}})


def heads(trace: AttentionTrace) -> pd.DataFrame:
    """Every head of one trace: the Find a head behaviours (previous token, [CLS], broad, induction, ...) and the
    Clark et al. label, one row per (layer, head)."""
    scores, stats = patterns.scores_and_stats(trace.weights, trace.tokens)  # one pass; stats (L, H, F)
    table = _per_head(scores)
    table["label"] = [name for row in patterns.labels(stats) for name in row]
    return table


def rollout(trace: AttentionTrace, residual: float = 0.5, fusion: str = "mean") -> np.ndarray:
    """Attention rollout [T, T]: row i says how much of input token j reaches position i after the last layer."""
    return _rollout(trace.weights, residual=residual, fusion=fusion)


def flow(trace: AttentionTrace, residual: float = 0.5, fusion: str = "mean") -> np.ndarray:
    """Exact attention flow [T, T] (max-flow through the layered graph), rows normalised."""
    return attention_flow(trace.weights, residual=residual, fusion=fusion)


def corpus(model, sentences: list[str], folder=None) -> pd.DataFrame:
    """Heads across a corpus: each head's mean behaviours over `sentences` and the share of sentences on which it
    shows its label ("consistency"), one row per head. Shards are cached on disk as in the app (folder: where)."""
    from experiments import corpus as ec

    result = ec.run(model, sentences, folder=None if folder is None else Path(folder))
    return _per_head(ec.head_scores(result.stats))


def next_token(model, text: str, target: str | None = None) -> pd.DataFrame:
    """Direct logit attribution of the decoder's next token: one row per part ("embed", "L0H1", "L0.mlp", "bias")
    and its share of the target's logit; .attrs holds "target", "logit" (the model's own), the logit lens ("lens",
    "lens_target"), the heads' parts as [L, H] ("heads"), and the block's "stages" and "writes" (what figures draw)."""
    from experiments.logit_lens import decompose

    d = decompose(model, text, target)
    table = pd.DataFrame({"part": list(d.parts), "logit": list(d.parts.values())})
    table.attrs.update(target=d.target, logit=d.logit, lens=d.lens, lens_target=list(d.lens_target),
                       heads=d.heads, stages=list(d.stages), writes=d.writes)
    return table


def patching(model, clean: str, corrupt: str, answer: str, wrong: str) -> pd.DataFrame:
    """Activation patching of each head's output from the clean run into the corrupted one: the fraction of the
    logit difference (answer - wrong) it restores, one row per head; .attrs holds clean_diff, corrupt_diff, the
    layers' names ("rows") and the "metric"."""
    from experiments.patching import patch_heads

    p = patch_heads(model, clean, corrupt, answer, wrong)
    table = _per_head({"restored": p.scores})
    table.attrs.update(clean_diff=p.clean_diff, corrupt_diff=p.corrupt_diff, rows=list(p.rows), metric=p.metric)
    return table


def circuit(model, pairs, method: str = "eap", steps: int = 5, top: int | None = None) -> pd.DataFrame:
    """Edge scores over pairs (clean, corrupt, answer, wrong) by "eap", "eap-ig" or "patching"
    (experiments.circuits): one row per edge (sender, receiver, score), largest |score| first, the first `top` only
    when given; .attrs["faithfulness"] is the metric with only these rows' edges clean over the model's own."""
    from experiments.circuits import edge_scores, faithfulness

    table = edge_scores(model, pairs, method=method, steps=steps)
    table = table.iloc[table.score.abs().argsort(kind="stable")[::-1]].head(top).reset_index(drop=True)
    table.attrs.update(method=method, faithfulness=faithfulness(model, pairs, table))
    return table


def importance(model, text: str = "", n: int = 16) -> pd.DataFrame:
    """Gradient importance of each head (|∂ loss / ∂ gate|, rows l2-normalised, Michel et al. 2019) on the task the
    Pruning view uses for this model (the paraphrase task for MiniLM over n pairs, sorting for the tiny decoder,
    masked-LM on `text` for an encoder with that head), and the confidence of each head."""
    from experiments import prune_tasks

    grad, conf, _ = prune_tasks.for_model(model, text).score(n, None)
    return _per_head({"importance": grad, "confidence": conf})


ATTRIBUTION_METHODS = ("attention", "rollout", "grad_x_input", "integrated_gradients", "occlusion", "random")


def attribution(model, text: str, methods=ATTRIBUTION_METHODS, text_b: str | None = None, steps: int = 64,
                baseline: str = "pad") -> pd.DataFrame:
    """Each method's score per token for the model's own prediction on `text`, as the Attribution view computes
    them: a row per token ("token", "special", a column per method); .attrs holds "target", "what" (one sentence
    on the number explained) and "results" ({method: experiments.attribution.Attribution}, what figures draw)."""
    from experiments.attribution_methods import attribute_all
    from experiments.explained import explain

    ex = explain(model, text, None, text_b)
    results = attribute_all(ex, tuple(methods), steps, baseline)
    first = next(iter(results.values()))
    table = pd.DataFrame({"token": first.tokens, "special": first.special}
                         | {m: a.scores for m, a in results.items()})
    table.attrs.update(target=first.target, what=ex.what, results=results)
    return table


def faithfulness(model, texts: list[str], methods=("attention", "rollout", "grad_x_input", "random"),
                 steps: int = 64, baseline: str = "pad") -> pd.DataFrame:
    """ERASER faithfulness over texts (DeYoung et al. 2020), as the Attribution view's Over rows: a row per method
    with its comprehensiveness and sufficiency (AOPC); .attrs holds the deletion "curves", their "fractions" and
    "value" (what falls: "probability" or "similarity"). Rows that cannot be explained are skipped ("skipped")."""
    from experiments.attribution_methods import LABELS
    from experiments.explained import explain
    from experiments.faithfulness import FRACTIONS, measure

    res = measure(model, [{"text": t} for t in texts], tuple(methods), FRACTIONS, steps, baseline, heads=False)
    what = explain(model, texts[0]).what
    table = pd.DataFrame([{"method": m, "label": LABELS[m], **res.summary[m]} for m in res.methods])
    table.attrs.update(curves=res.curves(), fractions=res.fractions, skipped=list(res.skipped),
                       value="similarity" if "cosine" in what or "length" in what else "probability")
    return table


def export_pruned(model, plan: dict[int, list[int]], folder) -> list[str]:
    """A copy of the model without the heads in `plan` ({layer: [heads]}), written to `folder` as the Pruning view
    exports it (config.json, model.pruned.safetensors, modeling_pruned.py, plan.json, README.md, the tokenizer):
    transformers alone loads it back with trust_remote_code=True. The model itself keeps every head. Returns the
    files written."""
    from models.contract import HF_FAMILIES, AttentionModel, named
    from models.prune import pruned_copy
    from models.pruned_hf import export

    if not isinstance(model, AttentionModel) or model.family not in HF_FAMILIES:
        raise UserError(f"export_pruned writes a transformers model; {named(model)} is not one: load 'bert', 'gpt' "
                        "or an 'hf:<folder>'.")
    return export(pruned_copy(model.model, plan), plan, str(folder), model.tokenizer)


def kv_cache(layers: int = 4, d_model: int = 256, heads: int = 8, kv_heads: int = 8, new_tokens: int = 128,
             uncached: bool = True, rounds: int = 3, dtype: str = "float32", device: str = "cpu") -> pd.DataFrame:
    """The KV cache view's live measurement: a random decoder of this shape (seed 0) generates new_tokens after a
    16-token prompt with the cache (and without, uncached=True), each mode the fastest of `rounds` interleaved
    generations as in the view, timed per token on this machine; a row
    per generated token ("cached_s", "uncached_s", cached "positions", "cache_bytes" measured from its tensors);
    .attrs holds "per_token" (the formula's bytes per cached token). Timings vary from run to run."""
    import limits
    from analysis.kv import kv_bytes_per_token
    from experiments.kv_cache import Record, generate, generate_modes
    from models.decoder import PROMPT_LEN, DecoderConfig, build, prompt
    from models.devices import DTYPES

    cfg = DecoderConfig(layers, d_model, heads, kv_heads, dtype=dtype)
    net = build(cfg, device, PROMPT_LEN + new_tokens, limits.current().decoder_bytes)
    generate(net, prompt(cfg, device=device), 2, use_cache=True)  # warm-up: first calls pick kernels, as the view
    records = {m: Record() for m in ("cached", "uncached")[: 1 + uncached]}
    generate_modes(lambda fraction: None, net, prompt(cfg, device=device), new_tokens, records, rounds=rounds)
    return kv_table(records, kv_bytes_per_token(layers, kv_heads, cfg.head_dim, DTYPES[dtype].itemsize))


def kv_table(records: dict, per_token: int) -> pd.DataFrame:
    """{"cached": experiments.kv_cache.Record, "uncached": ...} -> kv_cache's table (what the view's charts read)."""
    cached = records["cached"]
    table = pd.DataFrame({f"{m}_s": r.seconds for m, r in records.items()}
                         | {"positions": cached.positions, "cache_bytes": cached.cache_bytes})
    table.attrs.update(per_token=per_token, runs=cached.runs)
    return table
