"""From heads to circuits: a score for every edge of a decoder's computational graph, and a circuit's faithfulness.

The graph: senders are the input embedding, every head's write and every MLP's write; receivers are every head's
query, key and value inputs (three receivers per head), every MLP's input and the logits. Each receiver reads its
own copy of the residual stream, the sum of the writes of the senders before it (plus the output projections'
biases, the same in every run), so one edge can be cut without touching the others. Edge (s -> r) is patched when
r reads s's write from the corrupted run instead of the clean one. The metric is logit(answer) - logit(wrong) at
the last position.

    "eap"       (corrupt_s - clean_s) · ∂metric/∂input_r, summed over positions, on the clean run (Syed et al. 2024):
                two forward passes and one backward pass per pair for every edge
    "eap-ig"    the same with the gradient averaged over `steps` runs whose embeddings go from the corrupted text's
                to the clean one's, α = 1/steps ... 1 (Hanna et al. 2024)
    "patching"  the exact effect: metric with the one edge patched - clean metric; one forward per edge, batched

All averaged over the pairs. faithfulness() runs the clean text with every edge outside the circuit patched
(from the corrupted run, or from the mean of the corrupted runs) and divides the metric by the clean one.

The forward pass is written here (models.circuit_layouts gives each family's pieces): no hooks, gates or
state on the model, so a shared cached model can be asked concurrently. An encoder-decoder (BART, mBART, Marian,
`seq2seq-transformer`) goes through experiments.circuits_encdec instead: pairs of sources, the graph's encoder,
decoder and cross-attention, the first written token's logits; same functions, same columns. It does not search for
a circuit beyond ranking edges, does not handle encoders, and does not split a head's write by position.

    pairs = [("total = sum(values", "total = sum[values", ")", "]")]
    E = edge_scores(load("gpt"), pairs, method="eap")        # DataFrame: sender, receiver, score
    faithfulness(load("gpt"), pairs, E.loc[E.score.abs().nlargest(20).index])   # the top 20 edges kept
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import pandas as pd
import torch

from experiments import circuits_encdec as encdec
from experiments.patch_pair import Runner, pair_ids
from limits.errors import UserError
from models import gates
from models.circuit_encdec import Seq2Seq
from models.circuit_encdec import layout as encdec_layout
from models.circuit_layouts import FAMILIES, layout

METHODS = ("eap", "eap-ig", "patching")
ABLATIONS = ("corrupt", "mean")
Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class Graph:
    senders: list[str]       # "embed", "L0H1", "L0.mlp", in the order they write
    receivers: list[str]     # "L1H0.q", "L1H0.k", "L1H0.v", "L1.mlp", "logits", in the order they read
    allowed: torch.Tensor    # (S, R) bool: the sender writes before the receiver reads


def graph(n_layers: int, n_heads: int, has_mlp: bool, parallel: bool = False) -> Graph:
    """Senders, receivers and which edges exist: graph(1, 1, False).senders -> ['embed', 'L0H0']. parallel: each
    MLP reads its layer's input, as the heads do, so no head of its own layer writes into it (GPT-NeoX)."""
    senders, s_at, receivers, r_at = ["embed"], [-1], [], []
    for layer in range(n_layers):
        senders += [f"L{layer}H{h}" for h in range(n_heads)]
        s_at += [2 * layer] * n_heads
        receivers += [f"L{layer}H{h}.{p}" for p in "qkv" for h in range(n_heads)]
        r_at += [2 * layer] * 3 * n_heads
        if has_mlp:
            senders.append(f"L{layer}.mlp")
            s_at.append(2 * layer + 1)
            receivers.append(f"L{layer}.mlp")
            r_at.append(2 * layer + (0 if parallel else 1))
    receivers.append("logits")
    r_at.append(2 * n_layers)
    allowed = torch.tensor(s_at)[:, None] < torch.tensor(r_at)[None]       # (S, R)
    return Graph(senders, receivers, allowed)


def _forward(lay, g: Graph, ids: torch.Tensor, embed: torch.Tensor | None = None, alt: torch.Tensor | None = None,
             keep: torch.Tensor | None = None, delta: torch.Tensor | None = None):
    """Logits at the last position (B, V) and every sender's write (S, B, T, C), with receiver r reading sender s's
    write from `alt` (S, 1 or B, T, C) where keep (1 or B, S, R) is 0, and delta (R, B, T, C) added to r's input
    (zeros, for gradients). embed (B, T, C) replaces the embedding (EAP-IG's interpolation)."""
    x0 = lay.embed(ids) if embed is None else embed                         # (B, T, C)
    B, T, _ = x0.shape
    outs, resid = [x0], x0
    causal = torch.ones(T, T, dtype=torch.bool, device=x0.device).tril()  # (T, T)
    n_r = len(g.receivers)
    per_layer = (len(g.receivers) - 1) // lay.n_layers

    def read(r0: int, n: int) -> torch.Tensor:
        """Receivers r0 .. r0 + n - 1: each one's input (n, B, T, C)."""
        x = resid.expand(n, *resid.shape)                                   # (n, B, T, C)
        if alt is not None:
            s = len(outs)
            gap = alt[:s] - torch.stack(outs)                               # (s, B, T, C)
            w = 1 - keep[:, :s, r0:r0 + n].to(gap.dtype)                    # (B or 1, s, n)
            x = x + torch.einsum("bsn,sbtc->nbtc", w.expand(B, -1, -1), gap)  # (n, B, T, C)
        return x if delta is None else x + delta[r0:r0 + n]

    for layer in range(lay.n_layers):
        r0, H = layer * per_layer, lay.n_heads
        xq, xk, xv = read(r0, 3 * H).view(3, H, B, T, -1).transpose(1, 2)  # (B, H, T, C) each
        q, k, v = lay.qkv(layer, xq, xk, xv)                                # (B, H, T, hd) each
        scores = (q @ k.transpose(-2, -1)) * lay.scale(layer)               # (B, H, T, T)
        if (cap := lay.softcap(layer)) is not None:                         # Gemma 2: c · tanh(scores / c)
            scores = cap * torch.tanh(scores / cap)
        att = torch.softmax(scores.masked_fill(~causal, float("-inf")).float(), -1).to(v.dtype)  # (B, H, T, T)
        writes = lay.write(layer, att @ v)                                  # (B, H, T, C)
        if lay.has_mlp and lay.parallel:  # reads the layer's input, before its heads write
            m = lay.mlp(layer, read(r0 + 3 * H, 1)[0])                      # (B, T, C)
        outs += list(writes.unbind(1))
        resid = resid + writes.sum(1)                                       # (B, T, C)
        bias = lay.bias(layer)
        if bias is not None:
            resid = resid + bias
        if lay.has_mlp:
            if not lay.parallel:
                m = lay.mlp(layer, read(r0 + 3 * H, 1)[0])                  # (B, T, C)
            outs.append(m)
            resid = resid + m
    logits = lay.logits(read(n_r - 1, 1)[0][:, -1])                         # (B, V)
    return logits, torch.stack(outs)                                        # (B, V), (S, B, T, C)


@dataclass(frozen=True)
class _Pair:
    clean: torch.Tensor      # (1, T)  an encoder-decoder's source
    corrupt: torch.Tensor    # (1, T)
    answer: int
    wrong: int
    dec: torch.Tensor | None = None  # (1, 1) an encoder-decoder's decoder input: its start token

    def run(self, lay, g, text: str = "clean", batch: int = 1, **kw):
        """Logits (B, V) and the senders' writes of the clean or corrupted text, `batch` rows (_forward's kw)."""
        ids = (self.clean if text == "clean" else self.corrupt).expand(batch, -1)   # (B, T)
        if isinstance(lay, Seq2Seq):
            return encdec.forward(lay, g, ids, self.dec, **kw)
        return _forward(lay, g, ids, **kw)

    def metric(self, logits: torch.Tensor) -> torch.Tensor:
        """(B, V) -> (B,) logit(answer) - logit(wrong), in float64."""
        return logits[:, self.answer].double() - logits[:, self.wrong].double()


def _decoder(model) -> Runner:
    """The runner of a decoder-only model, or UserError with one sentence (a decoder without a language-model
    head: the runner's own)."""
    try:
        runner = Runner(model)
    except UserError:
        if model.family == "decoder":
            raise
        runner = None
    if runner is None or runner.kind not in ("decoder", "ours", "encdec"):
        raise UserError("Circuits follow a language model to its next token: pick 'gpt', 'induction', 'tiny', "
                         f"'seq2seq-transformer' or an hf: {FAMILIES.replace(' or ', ', ')}, BART, mBART or Marian "
                         "folder.")
    return runner


def _prepare(model, pairs) -> tuple[object, Graph, list[_Pair]]:
    """The layout, the graph and each pair's ids, or UserError with one sentence; runs no model but to check a
    layout taken by its modules' names on the longest clean text (_rebuilds)."""
    runner = _decoder(model)
    pairs = list(pairs)
    if not pairs:
        raise UserError("Give at least one pair (clean, corrupt, answer, wrong) to score edges on.")
    out, start = [], None
    if runner.kind == "encdec":
        encdec_layout(model)
        start = torch.full((1, 1), model.start, dtype=torch.long, device=model.device)   # (1, 1)
    for i, pair in enumerate(pairs):
        if len(pair) != 4:
            raise UserError(f"Pair {i + 1} has {len(pair)} parts: give (clean, corrupt, answer, wrong).")
        try:
            out.append(_Pair(*pair_ids(runner, *pair), dec=start))
        except UserError as err:
            raise UserError(f"Pair {i + 1}: {err}" if len(pairs) > 1 else str(err)) from None
    if runner.kind == "encdec":
        lay = encdec_layout(model)
        return lay, encdec.graph_of(lay), out
    longest = max(out, key=lambda p: p.clean.shape[1]).clean                 # (1, T)
    lay = layout(model, longest.shape[1])
    g = graph(lay.n_layers, lay.n_heads, lay.has_mlp, lay.parallel)
    if lay.by_shape:
        _rebuilds(model, lay, g, longest)
    return lay, g, out


# the text a layout taken by its modules' names is first checked on, before any pair is given (check)
PROBE = "The cat sat on the mat."
# a layout taken by its modules' names -> {text length: how far its pieces' logits were from the model's own}
_REBUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _rebuilds(model, lay, g: Graph, ids: torch.Tensor) -> None:
    """UserError unless a layout taken by its modules' names (lay.by_shape) rebuilds the model's own logits at the
    last position of ids (1, T) within 1e-5 of their size: one run of the pieces and one of the model, once per model
    and length (its pieces, not its name, say it computes nothing they leave out). Float32 only: half precision's
    rounding (~1e-3) would hide a piece left out (a layer without RoPE misses by ~3e-4), so a by-shape model in
    another dtype is refused in one sentence. Not models.residual._close: its tolerance, on a vector's length, is
    made for heads small next to the residual. Inside a gates context (models.gates) nothing is checked or kept: the
    model's forward is gated there and the pieces are not; a verdict found before still stands."""
    dtype = next(model.model.parameters()).dtype
    if dtype != torch.float32:
        raise UserError(f"Circuits on {lay.by_shape}, whose modules are named as Llama's, first check the pieces "
                         f"against its own logits, which {str(dtype).removeprefix('torch.')} rounds too coarsely to "
                         "tell a piece left out: pick float32 in the sidebar.")
    seen = _REBUILT.setdefault(model.model, {})
    T = ids.shape[1]
    if T not in seen and not gates.editing():
        with torch.no_grad():
            own = model.model(input_ids=ids).logits[:, -1].double()         # (1, V)
            try:
                got = _forward(lay, g, ids)[0].double()                     # (1, V)
            except torch.OutOfMemoryError:
                raise
            except (RuntimeError, TypeError, AttributeError, ValueError):  # a piece that does not fit this family
                got = None
        seen[T] = float("inf") if got is None else float((got - own).abs().max() / own.abs().max().clamp(min=1.0))
    gap = seen.get(T, 0.0)
    if not gap <= 1e-5:  # NaN too
        how = ("do not fit its modules" if gap == float("inf") else
               f"do not rebuild its logits (they are up to {100 * gap:.2g}% of its largest logit away)")
        raise UserError(f"This model ({lay.by_shape}) has modules named as Llama's (or as DeepSeek-V3's latent "
                         f"attention), but the pieces taken for them {how}, so it computes something circuits here do "
                         f"not redo and its edges would be misread: pick a {FAMILIES} folder, or another decoder laid "
                         "out as Llama (Mixtral, Qwen3-MoE, OLMo, DeepSeek-V3, ...).")


def _eap(lay, g: Graph, p: _Pair, steps: int | None) -> torch.Tensor:
    """(S, R) scores of one pair: EAP when steps is None, else EAP-IG with that many steps."""
    if isinstance(lay, Seq2Seq):
        return encdec.eap(lay, g, p.clean, p.corrupt, p.dec, p.metric, steps)
    with torch.no_grad():
        _, corrupt = _forward(lay, g, p.corrupt)                            # (S, 1, T, C)
        _, clean = _forward(lay, g, p.clean)                                # (S, 1, T, C)
    embed = None
    if steps is not None:
        with torch.no_grad():
            e_clean, e_corrupt = lay.embed(p.clean), lay.embed(p.corrupt)   # (1, T, C) each
        alpha = torch.arange(1, steps + 1, dtype=e_clean.dtype, device=e_clean.device)[:, None, None] / steps
        embed = e_corrupt + alpha * (e_clean - e_corrupt)                   # (steps, T, C)
    B = 1 if embed is None else embed.shape[0]
    R, (_, _, T, C) = len(g.receivers), clean.shape
    delta = torch.zeros(R, B, T, C, dtype=clean.dtype, device=clean.device, requires_grad=True)
    ids = p.clean.expand(B, -1)                                             # (B, T)
    with torch.enable_grad():
        logits, _ = _forward(lay, g, ids, embed=embed, delta=delta)         # (B, V)
        (grad,) = torch.autograd.grad(p.metric(logits).sum(), delta)        # (R, B, T, C)
    grad = grad.double().mean(1)                                            # (R, T, C)
    scores = torch.einsum("stc,rtc->sr", (corrupt - clean)[:, 0].double(), grad)  # (S, R)
    return scores * g.allowed.to(scores.device)


def _edge_index(g: Graph, edges) -> list[tuple[int, int]]:
    """(sender, receiver) names, or a DataFrame with those columns -> their indices; UserError for unknown ones."""
    if isinstance(edges, pd.DataFrame):
        edges = zip(edges["sender"], edges["receiver"])
    s_of = {n: i for i, n in enumerate(g.senders)}
    r_of = {n: i for i, n in enumerate(g.receivers)}
    out = []
    for s, r in edges:
        if s not in s_of or r not in r_of:
            raise UserError(f"No edge {s} -> {r} in this model: senders are like 'embed', 'L0H1', 'L0.mlp'; "
                             "receivers like 'L1H0.q', 'L1.mlp', 'logits'.")
        if not g.allowed[s_of[s], r_of[r]]:
            raise UserError(f"{s} writes after {r} reads, so there is no edge {s} -> {r}.")
        out.append((s_of[s], r_of[r]))
    return out


def _patched(lay, g: Graph, p: _Pair, edges: Sequence[tuple[int, int]], budget: int = 2 ** 28) -> torch.Tensor:
    """Metric with each one edge patched, minus the clean metric: (len(edges),) float64; as many edges a batch as
    keep every sender's write for all of them within about `budget` bytes (at most 256)."""
    S, R = g.allowed.shape
    with torch.no_grad():
        logits, _ = p.run(lay, g)
        base = p.metric(logits)[0]
        _, corrupt = p.run(lay, g, "corrupt")                               # (S, 1, T, C), or a pair of them
        size = sum(t.numel() * t.element_size() for t in _parts(corrupt))
        batch = max(1, min(256, budget // size))
        out = []
        for i in range(0, len(edges), batch):
            chunk = torch.tensor(edges[i:i + batch]).reshape(-1, 2)         # (E, 2)
            keep = torch.ones(len(chunk), S, R, device=logits.device)       # (E, S, R)
            keep[torch.arange(len(chunk)), chunk[:, 0], chunk[:, 1]] = 0
            logits, _ = p.run(lay, g, batch=len(chunk), alt=corrupt, keep=keep)  # (E, V)
            out.append(p.metric(logits) - base)
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.float64)


def _parts(writes) -> tuple[torch.Tensor, ...]:
    """A decoder's writes (S, B, T, C), or an encoder-decoder's pair of them (encoder's, decoder's), as a tuple."""
    return writes if isinstance(writes, tuple) else (writes,)


def edge_scores(model, pairs: Iterable[Sequence[str]], method: str = "eap", steps: int = 5,
                edges=None, progress: Progress = None) -> pd.DataFrame:
    """One row per edge (sender, receiver, score), in graph order, averaged over the pairs (clean, corrupt, answer,
    wrong). `edges` ((sender, receiver) names or a DataFrame of them) limits the rows, e.g. patching only the top
    edges of EAP; None: every edge. UserError with one sentence for an unknown method or unusable pairs."""
    if method not in METHODS:
        raise UserError(f"Unknown method '{method}': pick one of {', '.join(METHODS)}.")
    if method == "eap-ig" and steps < 1:
        raise UserError("EAP-IG needs at least one step.")
    lay, g, prepared = _prepare(model, pairs)
    chosen = (_edge_index(g, edges) if edges is not None
              else [tuple(e) for e in g.allowed.nonzero().tolist()])
    total = torch.zeros(len(chosen), dtype=torch.float64)
    rows = torch.tensor(chosen, dtype=torch.long).reshape(-1, 2)            # (E, 2)
    for i, p in enumerate(prepared):
        if method == "patching":
            total += _patched(lay, g, p, chosen).cpu()
        else:
            total += _eap(lay, g, p, steps if method == "eap-ig" else None).cpu()[rows[:, 0], rows[:, 1]]
        if progress:
            progress((i + 1) / len(prepared))
    return pd.DataFrame({"sender": [g.senders[s] for s, _ in chosen],
                         "receiver": [g.receivers[r] for _, r in chosen],
                         "score": (total / len(prepared)).numpy()})


def check(model, pairs: Iterable[Sequence[str]] | None = None, encoder_decoders: bool = False) -> None:
    """UserError with one sentence when circuits cannot be traced on `model` (or on these pairs); runs no model but
    to check, once per model and length, a layout taken by its modules' names (_rebuilds: on PROBE without pairs).
    encoder_decoders: the caller reads an encoder-decoder's names ("enc.L0H1", "cross.L0H1.k", ...), as the Circuits
    view does; without it one is refused, as the Pruning lab's circuit section reads decoder names ("L0H1") only."""
    if _decoder(model).kind == "encdec":
        encdec_layout(model)  # first: one it cannot trace at all (bert2bert) gets the Circuits view's sentence
        if not encoder_decoders:
            raise UserError("Circuits follow a decoder-only model on this page; an encoder-decoder's circuit (its "
                             "encoder, decoder and cross-attention) comes from the Circuits view or "
                             "api.circuit(model, pairs): pick 'gpt' or 'induction' here.")
    if pairs is not None:
        _prepare(model, pairs)
    elif _decoder(model).kind != "encdec":
        if layout(model, 1).by_shape:  # an hf: decoder taken as Llama by its modules' names: checked on PROBE
            probe = model.encode(PROBE)[0]                                   # (1, T)
            lay = layout(model, probe.shape[1])
            _rebuilds(model, lay, graph(lay.n_layers, lay.n_heads, lay.has_mlp, lay.parallel), probe)


def faithfulness(model, pairs: Iterable[Sequence[str]], edges, ablation: str = "corrupt") -> float:
    """Mean metric over the pairs with only `edges` reading the clean run (every other edge patched from the
    corrupted run, or with ablation="mean" from the mean of all pairs' corrupted runs), over the mean clean metric.
    Every edge: 1.0; none: corrupt metric / clean metric. It depends on the ablation (Miller et al. 2024)."""
    edges = list(zip(edges["sender"], edges["receiver"])) if isinstance(edges, pd.DataFrame) else list(edges)
    return faithfulness_curve(model, pairs, edges, [len(edges)], ablation)[0]


def faithfulness_curve(model, pairs: Iterable[Sequence[str]], ranked, counts: Sequence[int],
                       ablation: str = "corrupt", progress: Progress = None) -> list[float]:
    """faithfulness() of the first k edges of `ranked` for each k in counts (0: none), each pair's clean and
    corrupted runs made once and every k run in one batch: counts [0, 5, len(ranked)] -> [corrupt / clean, f5, f]."""
    if ablation not in ABLATIONS:
        raise UserError(f"Unknown ablation '{ablation}': pick one of {', '.join(ABLATIONS)}.")
    lay, g, prepared = _prepare(model, pairs)
    index = _edge_index(g, ranked)
    keep = torch.zeros(len(counts), *g.allowed.shape)                       # (K, S, R)
    for i, k in enumerate(counts):
        for s, r in index[:k]:
            keep[i, s, r] = 1
    with torch.no_grad():
        corrupt = [p.run(lay, g, "corrupt")[1] for p in prepared]            # (S, 1, T, C) each, or pairs
        if ablation == "mean":
            if len({tuple(c.shape for c in _parts(w)) for w in corrupt}) > 1:
                raise UserError("Mean ablation averages each position over the pairs, so every pair needs as "
                                 "many tokens: use pairs of one length, or ablation='corrupt'.")
            mean = tuple(torch.stack(c).mean(0) for c in zip(*map(_parts, corrupt)))
            corrupt = [mean if isinstance(corrupt[0], tuple) else mean[0]] * len(prepared)
        kept, clean = torch.zeros(len(counts), dtype=torch.float64), 0.0
        for i, (p, alt) in enumerate(zip(prepared, corrupt)):
            logits, _ = p.run(lay, g)
            clean += float(p.metric(logits)[0])
            logits, _ = p.run(lay, g, batch=len(counts), alt=alt, keep=keep.to(logits.device))
            kept += p.metric(logits).cpu()                                  # (K,)
            if progress:
                progress((i + 1) / len(prepared))
    if abs(clean) < 1e-12:
        raise UserError("The clean metric is zero on these pairs, so there is nothing to divide by: pick pairs "
                         "where the model prefers the answer.")
    return (kept / clean).tolist()
