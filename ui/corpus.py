"""Glue of the corpus view (views/corpus.py): picking a corpus, running the model over it with a progress
bar and a Stop button, the results kept per server, and what other views read without computing.

statistics() runs experiments.corpus.run, whose shards are cached on disk (experiments.corpus.cache_dir,
trimmed to limits.current().corpus_cache_bytes), so a second visit or a larger slice of the same corpus
only computes what is new. cached_stats() / head_scores() / redundancy_hints() read what the corpus
view already computed for a model over the built-in sentences (the head finder and the Pruning view
use them) and return None when there is nothing: they never run the model.
"""
from __future__ import annotations

import hashlib

import streamlit as st

import limits
from analysis import corpus_stats, qk_embedding
from analysis.corpus_stats import Shard
from analysis.patterns import FEATURES
from analysis.patterns import label as patterns_label
from analysis.token_context import context
from analysis.token_context import hover as hover  # views/corpus.py reads it as uc.hover
from data import corpus, text
from experiments import corpus as ec
from limits.errors import UserError
from ui import corpus_results as results
from ui.classroom import links
from ui.runtime import cache, heavy
from ui.show import plot
from ui.state import BIND, Selection
from ui.trace_text import trace_or_error
from viz.common import escape
from viz.heads import head as head_figure

DEFAULT_SENTENCES = 100  # a first visit takes a few seconds; the slider asks for more
STOPPED = "_corpus_stopped"  # session key: the run (model, corpus) the user stopped


def pick() -> corpus.Corpus | None:
    """The corpus widgets; the chosen Corpus, or None after telling the user what to do."""
    caps = limits.current()
    left, right = st.columns(2)
    source = left.radio("Corpus", ["Built-in", "Upload", results.SOURCE], horizontal=True, key="corpus_source", **BIND,
                        help="Built-in: English sentences from Python's documentation (data/corpus/README.md). Result "
                        "folder: statistics written by python -m corpus_heads.")
    if source == "Built-in":
        most = min(len(corpus.builtin().sentences), caps.corpus_sentences)
        n = right.slider("Sentences", 50, most, min(DEFAULT_SENTENCES, most), step=50, key="corpus_n", **BIND,
                         help="More sentences: steadier statistics. Only sentences not seen before are computed.")
        return corpus.builtin(n)
    if source == results.SOURCE:
        return results.pick(right)
    upload = right.file_uploader(f"A UTF-8 .txt file, or a .csv with a column of text (first "
                                 f"{caps.corpus_bytes:,} bytes)", type=["txt", "csv"], key="corpus_upload")
    if upload is None:
        st.info("Upload a .txt file (split into sentences) or a .csv file (one text per row) to use it as the corpus.")
        return None
    data, column = upload.getvalue(), None
    try:
        if upload.name.lower().endswith(".csv"):
            header = text.csv_header(data, caps.corpus_bytes)
            column = st.selectbox("Column", range(len(header)), format_func=header.__getitem__, key="corpus_column",
                                  **BIND)
        picked = corpus.from_upload(upload.name, data, column=column, max_bytes=caps.corpus_bytes,
                                    max_sentences=caps.corpus_sentences, max_chars=caps.corpus_sentence_chars)
    except UserError as err:
        st.error(str(err))
        return None
    for note in picked.notices:
        st.warning(note)
    return picked


@cache.memo("results")
def model_id(name: str, device: str, dtype: str) -> str:
    return ec.identity(cache.model(name, device, dtype))


def _key(sel: Selection, sentences: tuple[str, ...]) -> tuple:
    digest = hashlib.sha256("\x00".join(sentences).encode("utf-8", "surrogatepass")).hexdigest()
    return sel.model, sel.device, sel.dtype, digest


def on_disk(picked: corpus.Corpus) -> bool:
    """Whether the corpus's shards are written to the disk cache: not in hosted mode for a person's upload (it
    leaves no file behind)."""
    return picked.shipped or not limits.current().hosted


def statistics(sel: Selection, picked: corpus.Corpus) -> Shard | None:
    """The corpus statistics for the sidebar's model, computed with a progress bar and a Stop button
    (or the part done before Stop). Raises UserError when the model cannot be used."""
    if picked.folder:  # written by python -m corpus_heads: nothing to compute
        return results.statistics(sel, picked)
    key = _key(sel, picked.sentences)
    found, kept = cache.peek(("corpus-stats", *key))  # complete results of this server
    if found:
        return kept
    model = cache.model(sel.model, sel.device, sel.dtype)
    run = dict(folder=ec.cache_dir(), max_bytes=limits.current().corpus_cache_bytes,
               model_id=model_id(sel.model, sel.device, sel.dtype), disk=on_disk(picked))
    if st.session_state.get(STOPPED) == key:
        part = ec.run(model, picked.sentences, compute=False, **run)
        st.info(f"Stopped: what follows covers the first {part.done:,} of {part.total:,} sentences.")
        if st.button("Continue", key="corpus_continue", icon="▶️"):
            del st.session_state[STOPPED]
            st.rerun()
        return part.stats
    stop = st.empty()  # above the bar
    stop.button("Stop", key="corpus_stop", icon="⏹️", on_click=st.session_state.__setitem__,
                args=(STOPPED, key), help="Keeps the sentences done so far; Continue picks up from there.")
    try:  # one shard (a student's page of notes) is a light request, never queued
        return heavy.run("corpus", ("corpus-stats", *key), "Running the model over the corpus:",
                         lambda progress: ec.run(model, picked.sentences, **run, progress=lambda done, total: progress(
                             done / total, f"{done:,} of {total:,} sentences")).stats,
                         thread=False, light=len(picked.sentences) <= ec.SHARD)
    finally:
        stop.empty()


def notices(stats: Shard) -> None:
    """What the user should know about how the corpus was read by the model."""
    if stats.truncated:
        st.warning(f"{stats.truncated:,} sentence(s) were cut at {ec.MAX_TOKENS} tokens.")
    if stats.skipped:
        st.warning(f"The model could not read {stats.skipped:,} sentence(s); they were left out.")


@cache.memo("results")
def _cached(name: str, device: str, dtype: str, folder: str, version: int) -> Shard | None:
    """version: the cache folder's modification time, so shards written since are seen."""
    model = cache.model(name, device, dtype)
    result = ec.run(model, corpus.builtin(limits.current().corpus_sentences).sentences, compute=False,
                    model_id=model_id(name, device, dtype))
    return result.stats


def cached_stats(sel: Selection) -> Shard | None:
    """Statistics over the longest start of the built-in corpus already computed for this model, or None.
    Never runs the model (a model that cannot load gives None too)."""
    folder = ec.cache_dir()
    version = folder.stat().st_mtime_ns if folder.exists() else 0
    try:
        return _cached(sel.model, sel.device, sel.dtype, str(folder), version)
    except UserError:
        return None


def head_scores(sel: Selection) -> tuple[dict, int] | None:
    """For a head finder: ({behaviour: [L, H] score}, sentences they cover), when the corpus view has them."""
    stats = cached_stats(sel)
    return (ec.head_scores(stats), len(stats.tokens)) if stats is not None else None


def redundancy_hints(sel: Selection, threshold: float = 0.3) -> tuple[list[dict], int] | None:
    """Pairs of heads that attend alike over the built-in corpus (Jensen-Shannon distance under threshold)
    and the sentences they rest on, when the corpus view has computed them for this model."""
    stats = cached_stats(sel)
    if stats is None or not stats.js_rows:
        return None
    return corpus_stats.js_pairs(stats, threshold), len(stats.tokens)


COLUMNS = {"previous token": "prev", "next token": "next", "[CLS]": "[CLS]/BOS", "[SEP]": "[SEP]/EOS",
           "punctuation": "punct.", "entropy": "entropy", "self": "self", "same token": "same tok.",
           "distance": "distance"}


def behaviour_rows(stats: Shard, spread: bool) -> list[dict]:
    """One row per head: its label, each behaviour's corpus mean (or its spread across sentences) and
    its consistency (share of sentences with the same label)."""
    values = corpus_stats.spread(stats) if spread else corpus_stats.means(stats)
    means, agree = corpus_stats.means(stats), corpus_stats.consistency(stats)
    rows = []
    for l, row in enumerate(values):
        for h, v in enumerate(row):
            rows.append({"head": f"L{l} H{h}", "label": patterns_label(means[l, h]),
                         **{COLUMNS[f]: None if v[i] != v[i] else float(v[i]) for i, f in enumerate(FEATURES)},
                         "consistency": float(agree[l, h])})
    return rows


def column_config(spread: bool) -> dict:
    """How the table shows its numbers: shares as percents, distance in tokens."""
    what = "standard deviation across sentences of " if spread else "mean over sentences of "
    cfg = {COLUMNS[f]: st.column_config.NumberColumn(format="percent", help=what + f)
           for f in FEATURES if f != "distance"}
    cfg["distance"] = st.column_config.NumberColumn(format="%.2f", help=what + "|query − key| in tokens")
    cfg["consistency"] = st.column_config.ProgressColumn(
        format="percent", min_value=0.0, max_value=1.0, help="share of sentences on which the head gets this label")
    return cfg


def open_in_heads(text_: str, layer: int, head: int) -> None:
    """Button callback: the Heads view on this sentence with this layer and head picked (ui.classroom.links)."""
    links.request("heads", {"heads_layer": f"L{layer}", "heads_head": f"H{head}"}, {"text": text_, "text_b": ""})


def qk(sel: Selection, sentences: tuple[str, ...], layer: int, max_tokens: int) -> dict:
    """Queries and keys of every head of `layer` over the first sentences (experiments.corpus.qk_points), kept
    per server under the corpus's digest (the sentences are hashed once per call, not pickled)."""
    key = ("corpus-qk", *_key(sel, sentences), layer, max_tokens)
    found, points = cache.peek(key)
    if found:
        return points
    with st.spinner("Computing queries and keys…"):
        return cache.kept(key, lambda: ec.qk_points(cache.model(sel.model, sel.device, sel.dtype), sentences, layer,
                                                    max_tokens))


def projected(sel: Selection, sentences: tuple[str, ...], layer: int, max_tokens: int, head: int,
              method: str) -> tuple:
    """qk()'s points of one head projected to 2-D, kept under the same key plus head and method: the points'
    megabytes are never hashed (st.cache_data would hash them on every rerun)."""
    key = ("corpus-projected", *_key(sel, sentences), layer, max_tokens, head, method)
    found, value = cache.peek(key)
    if found:
        return value
    points = qk(sel, sentences, layer, max_tokens)
    with st.spinner("Projecting (t-SNE takes several seconds)…"):
        return cache.kept(key, lambda: qk_embedding.project(points["q"][:, head], points["k"][:, head], method))


def head_on_sentence(sel: Selection, sentence: str, layer: int, head: int, row: int, query: int | None = None) -> None:
    """One head on one corpus sentence (row `row`; `query` marked when given), and a button to open it in the
    Heads view. A sentence the model cannot read gets the model's own sentence (ui.trace_text), not a traceback."""
    name = f"L{layer} H{head}"
    tr = trace_or_error(sel, sentence)
    if tr is None:
        return
    mark = f", query «{tr.tokens[query]}»" if query is not None and query < len(tr.tokens) else ""
    title = escape(f"{name} on: {sentence[:80]}{mark}")  # plotly titles read HTML: a sentence is text
    plot(head_figure(tr.weights[layer, head], tr.tokens, tr.key_tokens, title),
         f"corpus-{name}", key=f"corpus_fig_{row}_{query}")
    st.button(f"Open {name} on this sentence in the Heads view", key=f"corpus_open_{row}_{query}",
              on_click=open_in_heads, args=(sentence, layer, head), icon="↗️")


def hits_table(sel: Selection, sentences: list[str], stats: Shard, hits: list[dict], layer: int, h: int,
               name: str) -> None:
    """The search's hits as a table (the sentence with query and key marked, the weight), and the picked hit's
    sentence (the first when none is picked) drawn for head L`layer` H`h`; a sentence when nothing matched."""
    rows = [{"sentence": context(stats.tokens[x["row"]], x["query"], x["key"]), "weight": x["weight"]} for x in hits]
    if not rows:
        st.info(f"No token of this corpus matches for {name}.")
        return
    st.dataframe(rows, key="corpus_hits", on_select="rerun", selection_mode="single-row", hide_index=True,
                 column_config={"weight": st.column_config.ProgressColumn(format="%.2f", max_value=1.0)})
    chosen = st.session_state.get("corpus_hits", {}).get("selection", {}).get("rows", [])
    hit = hits[chosen[0] if chosen and chosen[0] < len(hits) else 0]
    head_on_sentence(sel, sentences[int(stats.index[hit["row"]])], layer, h, hit["row"], hit["query"])
