"""How much work one request may ask for, in one place: the laptop limits and the hosted-demo limits.

Hosted mode is on when the environment variable ATTENTION_EXPLORER_HOSTED is 1/true/yes/on (on
Streamlit Community Cloud, a top-level secret `ATTENTION_EXPLORER_HOSTED = "1"` becomes that
variable; see docs/DEPLOY.md). It is read on every call, so a test can switch it per test.
In hosted mode `hf:` takes hub ids only: no folder on the server, no path-like name.
Views and models read the caps from current(); nothing here imports streamlit or torch.

    current().text_chars      -> 20000 (laptop) or 2000 (hosted)
    check_model_spec("../x")  -> UserError (a ValueError) in hosted mode, "../x" otherwise
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from limits.errors import UserError

ENV = "ATTENTION_EXPLORER_HOSTED"
# a hub id: "name" or "owner/name", letters, digits, '-', '_', '.'; no "..", no leading '.', no '/' at the ends
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?")


@dataclass(frozen=True)
class Limits:
    hosted: bool
    local_models: bool        # hf:<folder> allowed (laptop) or hub ids only (hosted)
    text_chars: int           # characters of sidebar text any model reads
    new_tokens: int           # tokens a decoder may generate for one request (KV cache view)
    beam_width: int           # widest beam search (seq2seq view)
    flow_tokens: int          # exact attention flow only up to this many tokens (decided by size, never by a clock)
    bpe_corpus_bytes: int     # pasted or uploaded BPE training text is cut here
    bpe_extra_vocab: int      # merges the BPE vocabulary slider may ask for beyond the alphabet
    pruning_sentences: int    # sentences one pruning sweep may score
    pruning_forward_passes: int  # rows through the model one pruning request may run in all (a backward counts 2)
    pruning_rows: int         # labelled rows of a user's file one pruning request uses (more: a fixed sample)
    pruning_upload_bytes: int  # a user's labelled CSV/JSONL is refused beyond this size
    pruning_row_tokens: int   # tokens per row of a user's file (longer rows are truncated, with a notice)
    attention_cost_n: int     # longest sequence the efficient-attention cost curves measure (dense holds n^2 floats)
    attention_cost_repeats: int  # most timed calls of one cost point (its time is the best of them)
    attention_cost_gflop: float  # GFLOP one cost sweep may spend, every call counted (attention_cost.sweep_gflop)
    corpus_bytes: int         # an uploaded corpus (.txt or .csv) is read up to here
    corpus_sentences: int     # sentences one corpus run may cover
    corpus_sentence_chars: int  # a longer sentence is cut here
    corpus_qk_tokens: int     # tokens the joint query-key embedding shows
    corpus_cache_bytes: int   # the on-disk cache of corpus statistics is trimmed to this size
    image_bytes: int          # an uploaded PNG/JPEG may be this large (vision view)
    image_pixels: int         # and hold this many pixels once decoded (a small file can unpack to a huge image)
    precision_items: int      # held-out items (pairs, strings) one precision measurement scores per variant
    precision_runs: int       # timed forward passes per variant in one latency measurement
    precision_batch: int      # largest timing batch (sequences of 128 tokens) of the precision view
    precision_tokens: int     # tokens of the text every precision variant runs again (int8 on a CPU can be slow)
    request_gflop: float      # GFLOP one KV-cache request may spend (generation, or measuring the three variants)
    decoder_bytes: int        # weights + cache + temporaries of one KV-cache decoder, checked before allocating
    kept_decoder_bytes: int   # a KV-cache decoder whose weights fit this is kept for the next request; a larger one not
    bertviz_lines: int        # attention lines bertviz may draw in one page (L x H x T x T for the model view)
    heavy_jobs: int           # long requests that run at once in one server process; the rest wait their turn
    model_cache_bytes: int    # loaded models (and KV decoders) one server keeps, in bytes
    model_idle_s: int         # a kept model nobody used in this long is dropped (results: ui.runtime.cache.IDLE_S)
    result_cache_bytes: int   # results (traces, flows, pages) one server keeps, in bytes
    export_bytes: int         # largest download one request may build in memory
    stream_tokens: int        # text tokens one attention-sinks request scores token by token (with each of 4 caches)


MIB, GIB = 1 << 20, 1 << 30

LAPTOP = Limits(hosted=False, local_models=True, text_chars=20_000, new_tokens=1024, beam_width=8,
                flow_tokens=128, bpe_corpus_bytes=1_000_000, bpe_extra_vocab=2000,
                pruning_sentences=64, pruning_forward_passes=200_000,
                pruning_rows=2000, pruning_upload_bytes=20_000_000, pruning_row_tokens=512, attention_cost_n=16_384,
                attention_cost_repeats=5, attention_cost_gflop=4000.0,
                corpus_bytes=1_500_000, corpus_sentences=5000, corpus_sentence_chars=1000, corpus_qk_tokens=4000,
                corpus_cache_bytes=500_000_000, image_bytes=8_000_000, image_pixels=25_000_000,
                precision_items=500, precision_runs=7,
                precision_batch=16, precision_tokens=128,
                request_gflop=1500.0, decoder_bytes=2 * GIB, kept_decoder_bytes=2 * GIB,
                bertviz_lines=12_000_000, heavy_jobs=2, model_cache_bytes=4 * GIB,
                model_idle_s=15 * 60, result_cache_bytes=2 * GIB,
                export_bytes=GIB, stream_tokens=2048)
HOSTED = Limits(hosted=True, local_models=False, text_chars=2_000, new_tokens=128, beam_width=4,
                # exact flow at 52 tokens takes the CPU 48 did before the solver's last two steps down became plain
                # loops (MiniLM, one thread, side by side: 48 tokens 0.116 -> 0.083 s, 56 tokens 0.143 s; at 128
                # tokens 1.15 s on one thread, 0.61 s on two: bench flow_128)
                flow_tokens=52, bpe_corpus_bytes=200_000, bpe_extra_vocab=1000,
                pruning_sentences=16, pruning_forward_passes=6_000,
                pruning_rows=200, pruning_upload_bytes=1_000_000, pruning_row_tokens=128, attention_cost_n=4096,
                # the hosted maximum (5 methods to 4,096, best of 2) counts 74 GFLOP: ~7 s of one core at the ~11
                # GFLOP/s a whole sweep ran at on this 2-core server, plus ~3 s for its two helpers' torch imports
                attention_cost_repeats=2, attention_cost_gflop=100.0,
                corpus_bytes=300_000, corpus_sentences=1000, corpus_sentence_chars=400, corpus_qk_tokens=2000,
                corpus_cache_bytes=100_000_000, image_bytes=2_000_000, image_pixels=4_000_000,
                # each held-out item is 3 sentences through every variant: torchao's int8 runs ~35x slower than
                # fp32 on a CPU without int8 dot-product instructions (MiniLM, 60 items: 51 s against 1.5 s)
                precision_items=40, precision_runs=2,
                precision_batch=4, precision_tokens=64,
                request_gflop=40.0, decoder_bytes=256 * MIB, kept_decoder_bytes=32 * MIB,
                bertviz_lines=1_200_000, heavy_jobs=1, model_cache_bytes=640 * MIB,
                model_idle_s=5 * 60, result_cache_bytes=160 * MIB,
                export_bytes=32 * MIB, stream_tokens=512)


def hosted() -> bool:
    """True when the hosted teaching demo's limits apply."""
    return os.environ.get(ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def current() -> Limits:
    """The limits in force now."""
    return HOSTED if hosted() else LAPTOP


def check_model_spec(spec: str) -> str:
    """The text after 'hf:', or UserError with one sentence when hosted mode must refuse it.

    Hosted: only hub ids ("bert-base-uncased", "google/bert_uncased_L-2_H-128_A-2"); anything path-like
    ("./x", "/etc", "a/../b", "~/x", "C:\\x") is refused. The answer depends on the text alone, never on
    what exists on the server's disk, so it tells nothing about the server's files (models.hf then looks a
    hub id up in the hub cache only, never as a folder).
    """
    spec = (spec or "").strip()
    if current().local_models:
        return spec
    if not HUB_ID.fullmatch(spec) or ".." in spec:
        raise UserError(f"This hosted demo loads models from the hub only: give a hub id such as "
                        f"bert-base-uncased, not a path ({spec[:60]!r}).")
    return spec


def idle_threads_sleep() -> bool:
    """Hosted mode: OMP_WAIT_POLICY=PASSIVE unless the environment sets it, so torch's OpenMP threads sleep between
    parallel regions instead of spinning for the next one. With many sessions on few cores the spinning costs far
    more than the work: a MiniLM forward took 0.29 CPU-seconds with 2 threads on a busy 2-core machine, 0.025 with
    PASSIVE. OpenMP reads it when torch first loads, so it is set when this module is imported (app.py imports it
    before anything imports torch). True when it set it."""
    if hosted() and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        return True
    return False


def one_thread_per_request() -> bool:
    """Hosted mode: OMP_NUM_THREADS=1 unless the environment sets it, so a request's torch work runs on the thread
    that asked for it. With many sessions on few cores a second thread per request only waits for a core; and a
    heavy request's lowered priority (ui.runtime.work.slot raises its thread's nice value) then covers all of its work,
    where a pool thread of torch's would keep competing with light pages at full priority. Set when this module is
    imported, before torch loads (as idle_threads_sleep); True when it set it."""
    if hosted() and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = "1"
        return True
    return False


def large_blocks_mapped() -> bool:
    """Hosted mode: memory.map_large_blocks() unless the environment sets glibc's MALLOC_MMAP_THRESHOLD_, so a
    freed tensor's memory goes back to the system when it is freed. A hosted Precision measurement (MiniLM and five
    copies, timed together) peaked ~250 MB lower with it; a forward pass was no slower in a quick check here. Called
    when this module is imported (app.py imports it first), so the server's allocations follow it; True when it set
    it."""
    if hosted() and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        from limits import memory

        return memory.map_large_blocks()
    return False


ARENAS_NOTICE = ("Hosted mode without MALLOC_ARENA_MAX: start each replica with MALLOC_ARENA_MAX=2 in its "
                 "environment (docs/DEPLOY.md, 'Memory per replica'); glibc reads it at start, and set any later, once "
                 "the server's threads have their arenas, it bounds nothing.")


def arenas_unbounded() -> str | None:
    """Hosted mode whose environment bounds no glibc arenas (MALLOC_ARENA_MAX, or glibc.malloc.arena_max in
    GLIBC_TUNABLES): ARENAS_NOTICE, logged as a warning when this module is imported; else None. Not set here with
    mallopt(M_ARENA_MAX) as the mmap threshold is: glibc fixes its arena limit when its 9th arena is made, and a
    Streamlit server had made 14 (one per thread) before app.py first imported this module, so only the
    environment, read before any thread starts, bounds them (tests/test_memory.py shows both)."""
    if hosted() and "MALLOC_ARENA_MAX" not in os.environ \
            and "glibc.malloc.arena_max" not in os.environ.get("GLIBC_TUNABLES", ""):
        logging.getLogger(__name__).warning(ARENAS_NOTICE)
        return ARENAS_NOTICE
    return None


idle_threads_sleep()
one_thread_per_request()
large_blocks_mapped()
arenas_unbounded()
