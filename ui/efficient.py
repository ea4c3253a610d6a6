"""Cached computations of the efficient-attention views (views/sparse.py, views/tiled.py) and their shared
cost section.

Masks, a pattern's effect on the model and a head's q, k, v are kept in the server's byte-bounded results
store (ui.runtime.cache.memo); the cost curves move a progress bar while they are measured, so they are kept through
ui.runtime.heavy.run (a hit draws nothing but the button), keyed by device and sizes.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import streamlit as st
import torch
import torch.nn.functional as F

import limits
from analysis import sparsity
from analysis.efficient import online_softmax_steps, tiled_attention
from analysis.inside_head import own_scale, scale_factor
from analysis.trace import HeadQKV
from experiments import attention_cost, sparse_models
from limits.errors import UserError
from models import HF_PREFIX, layout
from models.contract import HEAD_QKV
from ui import show
from ui.runtime import cache, heavy, work
from ui.state import BIND
from viz import efficient as V


@dataclass(frozen=True)
class Settings:
    """The pattern knobs of the sparse view; each pattern reads the ones it has (analysis.sparsity.build)."""
    w: int = 2
    dilation: int = 2
    block: int = 4
    band: int = 0
    every: int = 3
    globals_: tuple[int, ...] = (0,)
    n_random: int = 2

    def kwargs(self) -> dict:
        return asdict(self)


def keep_index(key: str, n: int) -> None:
    """Forget a choice (from a link or another model) that is not an index below n, before its widget is drawn."""
    value = st.session_state.get(key)
    if value is not None and not (isinstance(value, int) and 0 <= value < n):
        del st.session_state[key]


def family(model: str, device: str = "cpu", dtype: str = "float32") -> str | None:
    """'encoder' (MiniLM or an hf: BERT, RoBERTa or ELECTRA encoder: they take a per-call attention mask),
    'decoder' (the tiny decoder) or None: what a pattern can be laid on."""
    if model == "tiny":
        return "decoder"
    if model == "bert":
        return "encoder"
    if model.startswith(HF_PREFIX):
        try:
            m = cache.model(model, device, dtype)
        except UserError:  # the view says why it cannot be loaded where it loads it
            return None
        bert_like = m.family == "encoder" and layout.bert(m)
        return "encoder" if bert_like else None
    return None


def build_length(model: str, device: str, dtype: str, text: str, n: int) -> int:
    """Tokens a pattern is built over: the decoder's longest sequence for this prompt (its masks are slices of
    one pattern, as it writes token by token), else the n tokens shown."""
    if family(model, device, dtype) != "decoder":
        return n
    return sparse_models.decoder_length(cache.model(model, device, dtype), text)


@cache.memo("results")
def masks(n: int, n_build: int, settings: Settings, causal: bool) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Each pattern's [n, n] mask (the first n rows and columns of one built over n_build, and with the causal
    mask for a decoder), and for each pattern that cannot be built, its one-sentence reason."""
    out, errors = {}, {}
    lower = np.tril(np.ones((n, n), dtype=bool))
    for name in sparsity.PATTERNS:
        try:
            m = sparsity.build(name, n_build, **settings.kwargs())[:n, :n].numpy()
        except UserError as err:
            errors[name] = str(err)
            continue
        out[name] = m & lower if causal else m
    return out, errors


@cache.memo("results")
def reach(mask: np.ndarray, layers: int) -> list[np.ndarray]:
    return sparsity.receptive_field(torch.from_numpy(mask.copy()), layers)  # a kept mask is read-only


@cache.memo("results")
def count_curves(settings: Settings, n_min: int, n_max: int) -> tuple[list[int], dict[str, list[int | None]]]:
    """Pairs per pattern from its formula at n = n_min .. n_max (powers of two); None where the settings do not fit."""
    ns = sorted({n_min, *[2**k for k in range(int(math.log2(max(n_min, 1))) + 1, int(math.log2(n_max)) + 1)]})
    curves = {}
    for name in sparsity.PATTERNS:
        row = []
        for n in ns:
            try:
                row.append(sparsity.pairs(name, n, **settings.kwargs()))
            except UserError:
                row.append(None)
        curves[name] = row
    return ns, curves


@cache.memo("results", spinner="Running the model with and without the pattern…")
def effect(model: str, device: str, dtype: str, text: str, text_b: str | None, name: str,
           settings: Settings) -> sparse_models.Effect:
    """The pattern laid on the model for one call (nothing stays on the cached model), against it dense."""
    m = cache.model(model, device, dtype)
    if family(model, device, dtype) == "decoder":
        return sparse_models.decoder_effect(m, text, lambda n: sparsity.build(name, n, **settings.kwargs()))
    n = len(cache.trace(model, device, dtype, text, text_b).tokens)
    return sparse_models.encoder_effect(m, text, text_b, sparsity.build(name, n, **settings.kwargs()),
                                        dense=_dense_run(model, device, dtype, text, text_b))


@cache.memo("results")
def _dense_run(model: str, device: str, dtype: str, text: str, text_b: str | None) -> tuple:
    """The encoder's own forward on this text (attentions, hidden states, logits), kept while patterns change.
    Read only: every pattern compares against it."""
    m = cache.model(model, device, dtype)
    return sparse_models.encoder_run(m, m.encode(text, text_b)[0], None)


@cache.memo("results")
def head_qkv(model: str, device: str, dtype: str, text: str, text_b: str | None, layer: int, head: int) -> HeadQKV:
    """Tokens and head `head` of `layer`'s q, k, v (T, d) as the model computed them, for the tiled step-through."""
    m = cache.model(model, device, dtype)
    if m.family not in HEAD_QKV:
        raise UserError("The step-through takes q, k and v from an encoder, a Llama-style or GPT-2 decoder, the tiny "
                        "decoder or the toy: pick one of them.")
    hf = m.family in ("encoder", "decoder")  # models.hf: Q/K/V from the model's own layers
    d = m.head_qkv(text, layer, head, text_b) if hf else m.head_qkv(text, layer, head)
    if own_scale(d.scale) or not d.scale:  # a toy without 1/√d, or a model's own factor: q pre-scaled so that the
        # tiled kernel's own 1/√d gives the head's factor
        d = replace(d, q=d.q * (scale_factor(d.scale, d.q.shape[-1]) * math.sqrt(d.q.shape[-1])))  # (T, hs)
    return d


@cache.memo("results")
def walk(model: str, device: str, dtype: str, text: str, text_b: str | None, layer: int, head: int, qblock: int,
         block: int, causal: bool) -> tuple:
    """The tiled step-through of head_qkv's q, k, v (views/tiled.py): q (T, d); the online-softmax steps of query
    block `qblock` over the key blocks; torch's scaled_dot_product_attention on that block's rows (r, d); the
    scaled scores (T, T), drawn only to show where a tile sits; and max |tiled - SDPA| over the whole head.
    ValueError (not kept) for a query block past the text."""
    d = head_qkv(model, device, dtype, text, text_b, layer, head)
    q, k, v = (torch.from_numpy(np.array(x, dtype=np.float32)) for x in (d.q, d.k, d.v))  # (T, d) each
    steps = online_softmax_steps(q, k, v, query_block=qblock, block=block, causal=causal)
    full = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]  # (T, d)
    whole = tiled_attention(q[None, None], k[None, None], v[None, None], causal=causal, block=block)[0, 0]  # (T, d)
    i0, i1 = qblock * block, min((qblock + 1) * block, q.shape[0])
    scores = (q @ k.T / q.shape[-1] ** 0.5).numpy()  # (T, T)
    return q, steps, full[i0:i1], scores, float((whole - full).abs().max())


def sweep_budget(methods: tuple[str, ...], sizes: tuple[int, ...]) -> work.Budget:
    """The sweep's FLOPs (every call of every point, warm-ups included) against limits.current()'s bound."""
    caps = limits.current()
    gflop = attention_cost.sweep_gflop(methods, sizes, caps.attention_cost_repeats)
    return work.Budget(cost=gflop, limit=caps.attention_cost_gflop, unit="GFLOP", fix="choose a smaller largest n")


def cost_section(shown: tuple[str, ...], device: str, key: str) -> None:
    """Measured time and peak memory against n (log-log, fitted slopes) for the methods in `shown`.

    One button measures every method at once, so the other view finds its curves ready; the largest n
    follows limits.current().attention_cost_n (laptop or hosted).
    """
    cap = limits.current().attention_cost_n
    sizes = [n for n in attention_cost.SIZES if n <= cap]
    left, right = st.columns([3, 2])
    largest = left.select_slider("Largest n to measure", sizes, value=sizes[-1], key=f"{key}_max_n", **BIND)
    with right:
        show.explain(
            "Time and memory are measured here, not computed: each point runs once in a fresh process and reports "
            "the high-water mark of its memory beyond the inputs, then its best time over a few calls. On log-log "
            "axes a cost growing like n^s is a straight line of slope s: dense attention ≈ 2, a window ≈ 1.",
            r"\log t = a + s\,\log n \;\Rightarrow\; s = \text{fitted slope}",
            "runner.measure(\"tiled\", 4096)  # experiments/attention_cost.py: fork, reset VmHWM, run, read it")
    sizes = tuple(n for n in sizes if n <= largest)
    caps = limits.current()
    wanted = ("cost-sweep", device, sizes, caps.attention_cost_repeats)  # -> {method: {n: point}}
    methods = attention_cost.methods(device)
    budget = sweep_budget(methods, sizes)
    ask = heavy.Ask(f"{key}_measure", f"Measure {len(methods)} methods at n = {sizes[0]:,} … {sizes[-1]:,}",
                    help="Each point runs in a fresh process so its peak memory is its own; dense at 16,384 tokens "
                         "holds two 1 GiB matrices and takes a few seconds.", stays=True, primary=False)
    # queued like every heavy request, weighing the helper processes it starts (ui.runtime.work.slot)
    data = heavy.run(f"{key}_measure", wanted, "Measuring…", lambda progress: attention_cost.curves(
        methods, sizes, device, progress, caps.attention_cost_repeats), budget=budget, ask=ask, thread=False,
        weight=1 + attention_cost.SERVERS)
    if caps.hosted:
        st.caption(f"Bounded on this hosted server: n up to {caps.attention_cost_n:,} (a laptop goes to "
                   f"{limits.LAPTOP.attention_cost_n:,}) and each point's time the best of "
                   f"{caps.attention_cost_repeats} calls (a laptop: up to {limits.LAPTOP.attention_cost_repeats}), "
                   f"measured by {attention_cost.SERVERS} helper processes that end with the sweep.")
    if data is None:
        took = " (about a minute up to 16,384)" if sizes[-1] >= 16_384 else ""
        st.caption(f"Not measured yet on this server for these sizes: press the button to measure n = {sizes[0]:,} … "
                   f"{sizes[-1]:,}{took}.")
        return
    points = {m: data[m] for m in shown if m in data}
    slopes = {m: attention_cost.slope(sorted(p), [p[n]["seconds"] for n in sorted(p)]) for m, p in points.items()}
    mem_slopes = {m: attention_cost.slope(sorted(p), [p[n]["peak_bytes"] for n in sorted(p)])
                  for m, p in points.items()}
    left, right = st.columns(2)
    with left:
        show.plot(V.cost_curves(points, "seconds", attention_cost.LABELS, slopes), "attention_time", key=f"{key}_t")
    with right:
        show.plot(V.cost_curves(points, "peak_bytes", attention_cost.LABELS, mem_slopes), "attention_memory",
                  key=f"{key}_m")
    top = sizes[-1]
    st.dataframe([{"method": attention_cost.LABELS[m], f"seconds at {top:,}": f"{p[top]['seconds']:.4f}",
                   f"peak MiB at {top:,}": f"{p[top]['peak_bytes'] / 2**20:,.1f}",
                   "time slope": f"{slopes[m]:.2f}", "memory slope": f"{mem_slopes[m]:.2f}"}
                  for m, p in points.items()], hide_index=True)
    st.caption(f"One head of {attention_cost.HEAD_DIM} dimensions on {device}, "
               + ("one CPU thread; " if device == "cpu" else "float16, GPU synchronised; ")
               + f"slopes fitted from n = {attention_cost.SLOPE_FROM:,} up. Peak memory: "
               + ("the high-water mark of a fresh process's resident memory" if device == "cpu" else
                  "torch.cuda.max_memory_allocated")
               + ", beyond q, k, v and the mask.")
