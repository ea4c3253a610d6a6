"""What every head does over many sentences, kept as mergeable partial sums (one Shard per slice).

A Shard holds, for its sentences: the sums, sums of squares and counts of each head's behaviours
(analysis.patterns.FEATURES), those behaviours per sentence, the Jensen-Shannon sums between heads
(analysis.head_similarity, on every JS_EVERY-th sentence of the corpus, and among at most JS_HEADS heads at
a time: a larger model's heads are compared within groups of whole consecutive layers, which bounds the cost
per token whatever the model's size; js_layers says how many), and
for each query token the key each head gives most weight with that weight (what search reads).
merge() concatenates and adds, so shards computed in any order, process or machine merge into exactly
what one pass gives. Sizes per sentence: L·H·F floats plus L·H per token; never an attention map.
Does not run a model (experiments.corpus does) and does not draw.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields

import numpy as np

from analysis import head_similarity, patterns
from limits.errors import UserError

JS_EVERY = 8     # JS sums use corpus sentences 0, 8, 16, ...: ~1/8 of the cost, still hundreds of sentences
JS_HEADS = 144   # heads compared pairwise at most (BERT-base's 12 × 12): above, groups of consecutive layers
VERSION = 2      # bump when what a Shard holds or means changes: cached shards of another version are recomputed


def js_layers(n_layers: int, n_heads: int) -> int:
    """Layers per group of heads compared with each other: all of them when the model has at most JS_HEADS heads,
    else the most layers dividing n_layers whose heads fit in JS_HEADS (at least 1: a layer is never split).
    Decided by the model's shape alone. (12, 12) -> 12; (6, 12) -> 6; (32, 32) -> 4 (8 groups of 128 heads)."""
    return max(k for k in range(1, n_layers + 1) if n_layers % k == 0 and (k * n_heads <= JS_HEADS or k == 1))


def js_groups(n_layers: int, n_heads: int) -> list[range]:
    """The layers of each group: (32, 32) -> [range(0, 4), range(4, 8), ..., range(28, 32)]."""
    k = js_layers(n_layers, n_heads)
    return [range(a, a + k) for a in range(0, n_layers, k)]


@dataclass
class Shard:
    index: np.ndarray         # [N] int64: each sentence's position in the corpus
    tokens: list              # [N] lists of tokens, as the model's tokenizer wrote them
    per_sentence: np.ndarray  # [N, L, H, F] float32, patterns.FEATURES (NaN where undefined)
    count: np.ndarray         # [L, H, F] float64: sentences where each feature is defined
    total: np.ndarray         # [L, H, F] float64: their sum
    total_sq: np.ndarray      # [L, H, F] float64: sum of squares
    js_total: np.ndarray      # [G, S, S] float64: JS (bits) summed over query rows between the S = k·H heads of
                              # each group of k = js_layers(L, H) layers (G = L / k; one group: every pair)
    js_rows: int              # query rows in js_total
    top_key: np.ndarray       # [M, L, H] int16: M = all tokens of all sentences; the key with most weight
    top_weight: np.ndarray    # [M, L, H] float16: that weight
    truncated: int = 0        # sentences the model cut at its token cap
    skipped: int = 0          # sentences the model could not read

    @property
    def shape(self) -> tuple[int, int]:
        return self.count.shape[:2]

    @property
    def offsets(self) -> np.ndarray:
        """[N + 1]: sentence s's tokens are top_key[offsets[s]:offsets[s + 1]]."""
        return np.concatenate([[0], np.cumsum([len(t) for t in self.tokens])]).astype(np.int64)


def sentence(weights: np.ndarray, tokens: list[str], index: int) -> Shard:
    """One sentence's shard from its own attention, weights [L, H, T, T] (no padding)."""
    n_layers, n_heads, n, _ = weights.shape
    stats = patterns.sentence_stats(weights, tokens)                                   # (L, H, F)
    defined = ~np.isnan(stats)
    values = np.where(defined, stats, 0.0)
    use_js = index % JS_EVERY == 0
    groups = js_groups(n_layers, n_heads)
    size = len(groups[0]) * n_heads
    js = np.stack([head_similarity.js_pair_sums(weights[g.start:g.stop].reshape(size, n, n))
                   for g in groups]) if use_js else np.zeros((len(groups), size, size))     # (G, S, S)
    return Shard(
        index=np.array([index], np.int64), tokens=[list(tokens)],
        per_sentence=stats[None].astype(np.float32),
        count=defined.astype(np.float64), total=values.astype(np.float64), total_sq=values.astype(np.float64) ** 2,
        js_total=js, js_rows=n if use_js else 0,
        top_key=weights.argmax(-1).transpose(2, 0, 1).astype(np.int16),               # (T, L, H)
        top_weight=weights.max(-1).transpose(2, 0, 1).astype(np.float16),
    )



def merge(shards: list[Shard]) -> Shard:
    """Shards -> one, sentences in corpus order. Raises ValueError when their head counts differ."""
    if not shards:
        raise UserError("Nothing to merge: the corpus gave no sentence the model could read.")
    if len({s.shape for s in shards}) > 1:
        raise UserError("These shards come from models with different numbers of heads and cannot be merged.")
    shards = sorted(shards, key=lambda s: int(s.index[0]) if len(s.index) else -1)
    return Shard(
        index=np.concatenate([s.index for s in shards]),
        tokens=[t for s in shards for t in s.tokens],
        per_sentence=np.concatenate([s.per_sentence for s in shards]),
        count=sum(s.count for s in shards), total=sum(s.total for s in shards),
        total_sq=sum(s.total_sq for s in shards), js_total=sum(s.js_total for s in shards),
        js_rows=sum(s.js_rows for s in shards),
        top_key=np.concatenate([s.top_key for s in shards]), top_weight=np.concatenate([s.top_weight for s in shards]),
        truncated=sum(s.truncated for s in shards), skipped=sum(s.skipped for s in shards),
    )


def to_arrays(shard: Shard) -> dict[str, np.ndarray]:
    """Plain arrays for np.savez (no pickle): tokens as UTF-8 JSON bytes."""
    out = {f.name: np.asarray(getattr(shard, f.name)) for f in fields(Shard) if f.name != "tokens"}
    out["tokens"] = np.frombuffer(json.dumps(shard.tokens, ensure_ascii=False).encode(), np.uint8)
    out["version"] = np.array(VERSION)
    return out


def from_arrays(arrays) -> Shard:
    """Inverse of to_arrays; ValueError for another VERSION."""
    if int(arrays["version"]) != VERSION:
        raise UserError("These statistics were written by another version of the app.")
    kw = {f.name: arrays[f.name] for f in fields(Shard) if f.name != "tokens"}
    for name in ("js_rows", "truncated", "skipped"):
        kw[name] = int(kw[name])
    return Shard(tokens=json.loads(bytes(arrays["tokens"]).decode()), **kw)


def means(shard: Shard) -> np.ndarray:
    """[L, H, F]: each feature's mean over the sentences where it is defined (NaN where none)."""
    return np.where(shard.count > 0, shard.total / np.maximum(shard.count, 1), np.nan)


def spread(shard: Shard) -> np.ndarray:
    """[L, H, F]: each feature's standard deviation across sentences (how consistent the head is)."""
    mean = means(shard)
    var = shard.total_sq / np.maximum(shard.count, 1) - mean ** 2
    return np.sqrt(np.maximum(var, 0.0))


def consistency(shard: Shard) -> np.ndarray:
    """[L, H]: the share of sentences on which the head gets the same label as over the whole corpus."""
    overall = patterns.label_index(means(shard))                                     # (L, H)
    return (patterns.label_index(shard.per_sentence) == overall).mean(0)              # (N, L, H) -> (L, H)


def typical(shard: Shard) -> np.ndarray:
    """[L, H] int: for each head, the sentence (row) whose behaviours are nearest the head's corpus means,
    each feature measured in its own standard deviations."""
    z = (shard.per_sentence - means(shard)) / np.maximum(spread(shard), 1e-6)       # (N, L, H, F)
    return (np.nan_to_num(z) ** 2).sum(-1).argmin(0)                                # (L, H)


def js_distance(shard: Shard) -> np.ndarray:
    """[G, S, S] Jensen-Shannon distance between the heads of each group (js_groups), head p of group g being
    layer g·k + p // H, head p % H."""
    return head_similarity.distance(shard.js_total, shard.js_rows)


def js_names(shard: Shard) -> list[list[str]]:
    """The heads of each group, as js_distance orders them: [['L0 H0', 'L0 H1', ...], ...]."""
    n_heads = shard.shape[1]
    return [[f"L{l} H{h}" for l in g for h in range(n_heads)] for g in js_groups(*shard.shape)]


def js_pairs(shard: Shard, threshold: float) -> list[dict]:
    """head_similarity.redundant over every group, closest first: pairs are only ever within a group."""
    dist, names = js_distance(shard), js_names(shard)
    pairs = [p for d, n in zip(dist, names) for p in head_similarity.redundant(d, n, threshold)]
    return sorted(pairs, key=lambda p: p["distance"])


def _matcher(pattern: str):
    """'bank' matches the token exactly (case-insensitive, WordPiece's ## ignored); /re/ is a regular expression."""
    pattern = pattern.strip()
    if len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/"):
        try:
            rx = re.compile(pattern[1:-1], re.IGNORECASE)
        except re.error as err:
            raise UserError(f"'{pattern[1:-1]}' is not a regular expression ({err.msg}): "
                            "fix it or drop the slashes.") from None
        return lambda tok: rx.search(tok) is not None
    want = pattern.lower().removeprefix("##")
    return lambda tok: tok.lower().removeprefix("##").lstrip("Ġ▁") == want


def search(shard: Shard, layer: int, head: int, query: str = "", key: str = "", top: int = 20,
           skip_first: bool = False) -> list[dict]:
    """Where head (layer, head) puts the most weight from a query token matching `query` onto its top key,
    that key matching `key` (either may be empty: any). Best first:
    [{"row": sentence row, "query": position, "key": position, "weight": w}, ...].
    skip_first: leave out queries at position 0 (in a decoder they can only attend to themselves: weight 1)."""
    flat = [t for toks in shard.tokens for t in toks]
    ids: dict[str, int] = {}
    inv = np.array([ids.setdefault(t, len(ids)) for t in flat], np.int64)            # (M,) token id
    row = np.repeat(np.arange(len(shard.tokens)), np.array([len(t) for t in shard.tokens], np.int64))  # (M,)
    key_at = shard.offsets[row] + shard.top_key[:, layer, head]                       # (M,) flat key index
    ok = np.ones(len(flat), bool)
    if skip_first:
        ok[shard.offsets[:-1][np.diff(shard.offsets) > 0]] = False                     # each sentence's position 0
    for pattern, tok_of in ((query, inv), (key, inv[key_at])):
        if pattern.strip():
            match = _matcher(pattern)
            ok &= np.array([match(t) for t in ids], bool)[tok_of]
    weight = shard.top_weight[:, layer, head].astype(np.float64)
    found = np.flatnonzero(ok)
    best = found[np.argsort(-weight[found], kind="stable")][:top]
    start = shard.offsets[row[best]]
    return [{"row": int(r), "query": int(m - s), "key": int(k - s), "weight": float(weight[m])}
            for r, m, k, s in zip(row[best], best, key_at[best], start)]


def diffs(a: Shard, b: Shard) -> dict[str, tuple[float, float]]:
    """Per array of two Shards: (largest |a - b|, largest |b|), NaN where both are NaN counting 0; ValueError when
    they cannot be compared (other sentences, tokens or shapes, NaN in one only). A sum over many sentences (total,
    total_sq, js_total) is large, so its rounding is too: the second number gives the scale."""
    out = {}
    for f in fields(Shard):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if not isinstance(x, np.ndarray):
            if x != y:
                raise ValueError(f"The two results differ in {f.name}.")
            continue
        x, y = x.astype(np.float64), y.astype(np.float64)
        if x.shape != y.shape or not np.array_equal(np.isnan(x), np.isnan(y)):
            raise ValueError(f"The two results differ in the shape or the undefined values of {f.name}.")
        out[f.name] = (float(np.nanmax(np.abs(x - y), initial=0.0)), float(np.nanmax(np.abs(y), initial=0.0)))
    return out


def max_abs_diff(a: Shard, b: Shard) -> float:
    """The largest |a - b| over every array of two Shards (diffs); equal runs -> 0.0."""
    return max((d for d, _ in diffs(a, b).values()), default=0.0)
