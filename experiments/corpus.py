"""Run a text model over a corpus and keep what each head does: batched, streamed, cached on disk.

run() cuts the corpus into shards of SHARD sentences. For each shard it runs the model (a BERT-like
models.hf.Encoder: padded batches, one forward pass each with output_attentions=True, each sentence's
padding stripped before its statistics; any other model: attend() per sentence), turns the attention
into an analysis.corpus_stats.Shard, writes it to the cache folder under a hash of (model identity,
the shard's sentences and position, settings) and lets the attention go. Merging the shards gives the
corpus statistics, so memory holds one batch of attention at a time, a stopped run keeps what it
finished, and a second visit reads the shards back. The cache folder is trimmed to a byte bound,
least recently used first. A larger corpus can be split the same way across processes or machines:
shard_stats(model, sentences[first:first + SHARD], first) anywhere, corpus_stats.to_arrays() to ship it,
corpus_stats.merge() at the end. qk_points() gives one layer's queries and keys for the joint embedding.
Does not draw; does not touch the model (no hooks, no mode or thread changes).

    result = run(models.load("bert"), corpus.builtin(200).sentences, progress=print)
    corpus_stats.means(result.stats)[3, 7]   # layer 3, head 7: patterns.FEATURES over 200 sentences
"""
from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from analysis import corpus_stats, patterns
from analysis.corpus_stats import Shard
from experiments import page_bytes
from limits.errors import UserError
from models import layout
from models.hf import Encoder
from models.hf.decoders import Decoder
from models.internals import layer_qkv, qkv, why_not

SHARD = 64                  # sentences per shard: the unit of progress, stopping and caching
MAX_TOKENS = 128            # a sentence is cut here ([CLS] and [SEP] included), with a count in the result
BATCH = 16                  # sentences per forward pass, sorted by length: little padding (a third less work than 64)
BATCH_CELLS = 16 * 64 * 64  # and sentences × padded length² at most: bounds the attention held at once
CACHE_ENV = "ATTENTION_EXPLORER_CACHE"

Progress = Callable[[int, int], None] | None   # (sentences done, sentences in all)
Cancel = Callable[[], bool] | None             # True: stop before the next shard


@dataclass(frozen=True)
class Result:
    stats: Shard | None    # merged statistics of the shards done (None when none is)
    done: int              # sentences covered
    total: int             # sentences asked for
    computed: int          # shards the model ran on
    loaded: int            # shards read from the cache
    stopped: bool          # cancel() asked to stop before the end


def cache_dir() -> Path:
    """$ATTENTION_EXPLORER_CACHE, else ~/.cache/attention-explorer/corpus."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "attention-explorer" / "corpus")


def _raw(t: torch.Tensor):
    """A tensor's bytes, in pieces (experiments.page_bytes: pages of a weights file this process has not touched are
    read from the file, so hashing keeps no weight page resident), without a copy when it is a contiguous CPU
    tensor."""
    flat = t.detach().cpu().contiguous().reshape(-1)
    memory = memoryview(flat.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[flat.element_size()])
                        .numpy()).cast("B")
    return page_bytes.chunks(flat.data_ptr(), memory.nbytes, memory)


def _tokenizer_digest(tok) -> tuple:
    """A tokenizer's class, size, casing and every 61st token (a transformers or a tokenizers one)."""
    if hasattr(tok, "convert_ids_to_tokens"):
        n = len(tok)
        sample = tok.convert_ids_to_tokens(list(range(0, n, 61)))
    else:
        n = tok.get_vocab_size()
        sample = [tok.id_to_token(i) for i in range(0, n, 61)]
    return type(tok).__name__, n, getattr(tok, "do_lower_case", None), tuple(sample)


def identity(model) -> str:
    """A digest of what decides the model's attention: its class, its settings, its tokenizer's
    vocabulary and the bytes of every tensor it holds, so changed weights or another tokenizer give
    another digest (~0.1 s for MiniLM's 90 MB)."""
    h = hashlib.blake2b(type(model).__name__.encode(), digest_size=16)
    seen = set()
    for name, value in sorted(vars(model).items()):
        if isinstance(value, torch.nn.Module):
            tensors = value.state_dict()
        elif isinstance(value, torch.Tensor):
            tensors = {"": value}
        else:
            if hasattr(value, "get_vocab"):
                value = _tokenizer_digest(value)
            if isinstance(value, (int, float, str, bool, tuple, dict)) or hasattr(value, "__dataclass_fields__"):
                h.update(f"{name}={value!r}".encode())
            continue
        for key, t in tensors.items():
            if (t.data_ptr(), t.shape) not in seen:  # a wrapper (e.g. a masked-LM head) shares its encoder's tensors
                seen.add((t.data_ptr(), t.shape))
                h.update(f"{name}.{key}{t.dtype}{tuple(t.shape)}".encode())
                for piece in _raw(t):
                    h.update(piece)
    return h.hexdigest()


def _key(model_id: str, sentences: list[str], first: int) -> str:
    h = hashlib.sha256(f"{corpus_stats.VERSION}|{model_id}|{first}|{MAX_TOKENS}|{corpus_stats.JS_EVERY}".encode())
    for s in sentences:
        h.update(b"\x00" + s.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:40]


def shard_file(folder: Path, model_id: str, sentences: list[str], first: int) -> Path:
    """Where run() keeps the shard of sentences first, first + 1, ... for the model identity(model) == model_id."""
    return folder / f"{_key(model_id, sentences, first)}.npz"


def _batched(model) -> bool:
    """Whether one padded forward pass gives every sentence's attention (a plain transformers encoder)."""
    return isinstance(model, Encoder) and not model.pruned_heads


def _forward(model: Encoder, sentences: list[str], hidden: bool = False):
    """Yield (sentence indices, tokens per sentence, out, cut) per padded batch, shortest sentences first."""
    tok = model.tokenizer
    full = tok(sentences, truncation=False, verbose=False)["input_ids"]
    ids = tok(sentences, truncation=True, max_length=min(MAX_TOKENS, model.max_tokens))["input_ids"]
    order = sorted(range(len(sentences)), key=lambda i: len(ids[i]))
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and end - start < BATCH and (end - start + 1) * len(ids[order[end]]) ** 2 <= BATCH_CELLS:
            end += 1
        batch = order[start:end]
        width = len(ids[batch[-1]])
        input_ids = torch.full((len(batch), width), tok.pad_token_id or 0, dtype=torch.long)  # (B, T)
        mask = torch.zeros((len(batch), width), dtype=torch.long)                           # (B, T)
        for b, i in enumerate(batch):
            input_ids[b, :len(ids[i])] = torch.tensor(ids[i])
            mask[b, :len(ids[i])] = 1
        with torch.no_grad():
            out = model.model(input_ids=input_ids.to(model.device), attention_mask=mask.to(model.device),
                              output_attentions=True, output_hidden_states=hidden)
        tokens = [tok.convert_ids_to_tokens(ids[i]) for i in batch]
        yield batch, tokens, out, sum(len(full[i]) > len(ids[i]) for i in batch)
        start = end


def shard_stats(model, sentences: list[str], first: int) -> Shard:
    """Statistics of sentences first, first + 1, ... (one shard); ValueError when the model reads none."""
    parts, cut, skipped, reason = [], 0, 0, None
    if _batched(model):
        for batch, tokens, out, n_cut in _forward(model, sentences):
            layers = [a.float().cpu().numpy() for a in out.attentions]        # L × (B, H, T, T), no copy on cpu
            for b, (i, toks) in enumerate(zip(batch, tokens)):
                n = len(toks)
                weights = np.stack([a[b, :, :n, :n] for a in layers])          # (L, H, n, n): padding stripped
                parts.append(corpus_stats.sentence(weights, toks, first + i))
            cut += n_cut
    else:
        for i, s in enumerate(sentences):
            try:
                tr = model.attend(s)
            except ValueError as err:
                skipped, reason = skipped + 1, reason or str(err)
                continue
            if tr.kind == "cross":
                raise UserError("This model's attention runs from one text to another; the corpus view needs "
                                "self-attention: choose BERT or another encoder.")
            parts.append(corpus_stats.sentence(tr.weights, tr.tokens, first + i))
            cut += any("truncated" in n.lower() for n in tr.notices)
    if not parts:
        raise UserError(f"The model could read none of these sentences: {reason}")
    shard = corpus_stats.merge(parts)
    shard.truncated, shard.skipped = cut, skipped
    return shard


def trim(folder: Path, max_bytes: int) -> int:
    """Delete the least recently used shard files until the folder holds at most max_bytes; its size after."""
    files = []
    for p in folder.glob("*.npz"):
        try:
            st = p.stat()
        except FileNotFoundError:  # trimmed by another session meanwhile
            continue
        files.append((st.st_mtime, st.st_size, p))
    size = sum(s for _, s, _ in files)
    for _, s, p in sorted(files):
        if size <= max_bytes:
            break
        size -= s
        p.unlink(missing_ok=True)
    return size


def _load(path: Path) -> Shard | None:
    try:
        with np.load(path, allow_pickle=False) as arrays:
            shard = corpus_stats.from_arrays(arrays)
    except (OSError, ValueError, KeyError):  # missing, half-written by another process, or another version
        return None
    os.utime(path)  # recently used: trimmed last
    return shard


def _save(path: Path, shard: Shard) -> None:
    tmp = path.with_suffix(f".{uuid.uuid4().hex}.tmp")  # two sessions may write the same shard at once
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **corpus_stats.to_arrays(shard))
    os.replace(tmp, path)  # atomic: a reader sees the old file, the new one, or none


def run(model, sentences, *, folder: Path | None = None, max_bytes: int = 500_000_000, progress: Progress = None,
        cancel: Cancel = None, shard_size: int = SHARD, compute: bool = True, model_id: str | None = None,
        disk: bool = True) -> Result:
    """Statistics of every head over `sentences`, shard by shard, each read from the cache when there.

    compute=False reads only: it stops (stopped=True) at the first shard not in the cache. model_id
    saves recomputing identity(model) when the caller has it. disk=False neither reads nor writes the
    cache (a hosted server keeps no trace of an upload).
    """
    sentences = list(sentences)
    if not sentences:
        raise UserError("The corpus is empty: use the built-in sentences or upload a file with text.")
    folder = folder or cache_dir()
    if disk:
        folder.mkdir(parents=True, exist_ok=True)
    model_id = (model_id or identity(model)) if disk else ""
    shards, computed, loaded, stopped = [], 0, 0, False
    for first in range(0, len(sentences), shard_size):
        if cancel is not None and cancel():
            stopped = True
            break
        chunk = sentences[first:first + shard_size]
        path = shard_file(folder, model_id, chunk, first)
        shard = _load(path) if disk else None
        if shard is None and not compute:
            stopped = True
            break
        if shard is None:
            shard = shard_stats(model, chunk, first)
            if disk:
                _save(path, shard)
                trim(folder, max_bytes)
            computed += 1
        else:
            loaded += 1
        shards.append(shard)
        if progress is not None:
            progress(min(first + shard_size, len(sentences)), len(sentences))
    done = min(len(shards) * shard_size, len(sentences))
    return Result(corpus_stats.merge(shards) if shards else None, done, len(sentences), computed, loaded, stopped)


def cached(model, sentences, folder: Path | None = None, model_id: str | None = None) -> Shard | None:
    """The statistics when every shard of `sentences` is already in the cache, else None (computes nothing)."""
    result = run(model, sentences, folder=folder, compute=False, model_id=model_id)
    return None if result.stopped else result.stats


def head_scores(stats: Shard) -> dict[str, np.ndarray]:
    """For a head finder: behaviour name -> [L, H] score over the corpus (patterns.FEATURES, plus
    "consistency": the share of sentences on which the head shows its corpus label)."""
    means = corpus_stats.means(stats)
    out = {name: means[..., i] for i, name in enumerate(patterns.FEATURES)}
    out["consistency"] = corpus_stats.consistency(stats)
    return out


def qk_refusal(model) -> str | None:
    """Why qk_points() cannot recompute this model's queries and keys (one sentence), or None when it can."""
    kind = layout.name(model)
    if (_batched(model) and layout.bert(model)) or (isinstance(model, Decoder) and (layout.llama(model)
                                                                                   or layout.gpt2(model))):
        return None
    if isinstance(model, Encoder) and model.pruned_heads:
        return "The queries-and-keys map needs every head of the model; this one has pruned heads."
    what = f"this {kind} model" if kind else f"the {model.label}"
    return (f"The queries-and-keys map recomputes Q and K from a model's own layers for BERT, RoBERTa and ELECTRA "
            f"encoders and for Llama-style (Llama, Mistral, Qwen2) and GPT-2 decoders; {what} lays its heads out "
            "otherwise. The other tabs work for it; for this map, pick 'bert' or 'gpt' in the sidebar.")


def rotates(model) -> bool:
    """Whether qk_points() gives this model's Q and K after a rotary position embedding (a Llama-style decoder)."""
    return isinstance(model, Decoder) and layout.llama(model)


def _encoder_qk(model: Encoder, sentences: list[str], layer: int):
    """Per sentence, in padded batches: (its index, tokens, q [T, H, hs], k [T, H, hs]) from the layer's own query
    and key modules applied to its input hidden_states[layer] (models.internals.qkv)."""
    for batch, toks, out, _ in _forward(model, sentences, hidden=True):
        with torch.no_grad():
            q, k, _ = qkv(model.model, out.hidden_states[layer], layer)           # (B, H, T, hs)
        for b, (i, t) in enumerate(zip(batch, toks)):
            n = len(t)
            yield i, t, q[b, :, :n].transpose(0, 1).float().cpu().numpy(), \
                k[b, :, :n].transpose(0, 1).float().cpu().numpy()                # (T, H, hs) each


def _decoder_qk(model, sentences: list[str], layer: int):
    """Per sentence: (its index, tokens, q [T, H, hd], k [T, H, hd]), Q and K after RoPE exactly as
    models.internals computes them for the Inside-a-head view; a query head's keys are its key/value head's."""
    for i, s in enumerate(sentences):
        ids = model.encode(s)[0][:, :MAX_TOKENS]                                   # (1, T)
        why = why_not(model.config, ids.shape[1])
        if why:
            raise UserError(why)
        with torch.no_grad():
            hidden = model.model(input_ids=ids, output_hidden_states=True).hidden_states[layer]  # (1, T, C)
            _, q, k, _ = layer_qkv(model.model, hidden, layer)                    # (1, H, T, hd), (1, H_kv, T, hd)
        k = k[:, model.kv_head_of]                                                 # (1, H, T, hd)
        yield i, model.tokenizer.convert_ids_to_tokens(ids[0].tolist()), \
            q[0].transpose(0, 1).float().cpu().numpy(), k[0].transpose(0, 1).float().cpu().numpy()  # (T, H, hd)


def qk_points(model, sentences, layer: int, max_tokens: int) -> dict:
    """Queries and keys of every head of `layer` for the tokens of the first sentences, up to max_tokens.

    Returns q, k [N, H, hs] (float32), tokens [N], row [N] (sentence), pos [N] (position in it).
    A BERT-like encoder: its layer input hidden_states[layer] goes through the layer's own query and key
    modules (models.internals.qkv). A Llama-style or GPT-2 decoder: Q and K after the rotation (RoPE), as the
    Inside-a-head view shows them (models.internals.layer_qkv). Nothing is hooked on the shared model;
    ValueError with qk_refusal()'s sentence for any other model.
    """
    why = qk_refusal(model)
    if why:
        raise UserError(why)
    n_layers = model.n_layers  # a hybrid's attending layers, as the other views number them
    if not 0 <= layer < n_layers:
        raise UserError(f"Layer {layer} does not exist: this model has layers 0 to {n_layers - 1}.")
    ids = model.tokenizer(list(sentences), truncation=True, max_length=min(MAX_TOKENS, model.max_tokens))["input_ids"]
    used, total = [], 0
    for i, row in enumerate(ids):
        if total + len(row) > max_tokens:
            break
        used.append(i)
        total += len(row)
    used = used or [0]
    qs, ks, tokens, rows, pos = [], [], [], [], []
    per_sentence = _encoder_qk if _batched(model) else _decoder_qk
    for j, t, q, k in per_sentence(model, [sentences[i] for i in used], layer):
        qs.append(q)
        ks.append(k)
        tokens += t
        rows += [used[j]] * len(t)
        pos += list(range(len(t)))
    order = np.lexsort((np.array(pos), np.array(rows)))  # back to corpus order
    return {"q": np.concatenate(qs)[order], "k": np.concatenate(ks)[order], "tokens": [tokens[j] for j in order],
            "row": np.array(rows)[order], "pos": np.array(pos)[order]}
