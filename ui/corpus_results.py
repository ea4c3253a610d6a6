"""The corpus view's third source: a result folder written by `python -m corpus_heads` (in one process or on a Ray
cluster), opened without running the model over the corpus again.

pick() lists the folders found under experiments.corpus_results.results_root() (newest first) and, when the app
is not hosted, takes a typed path; it returns the folder's sentences as a data.corpus.Corpus whose `folder` is
set. statistics() reads the folder's merged statistics once per folder version, and refuses (with a button that
switches the sidebar) when the sidebar's model is not the one the folder was computed with: the view draws heads
on sentences with the sidebar's model, so the two must agree.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

import limits
from analysis.corpus_stats import Shard
from data import corpus
from experiments import corpus_results
from limits.errors import UserError
from models import HF_PREFIX
from ui.classroom import links
from ui.runtime import cache
from ui.state import BIND, Selection

SOURCE = "Result folder"


@cache.memo("results")
def _read(folder: str, version: int) -> corpus_results.Opened:
    """version: the result file's modification time, so a folder written again is read again."""
    return corpus_results.read(Path(folder))


def _open(folder: Path) -> corpus_results.Opened:
    """The folder read once per version; ValueError with one sentence when it is not a result folder."""
    result = folder / corpus_results.RESULT
    return _read(str(folder), result.stat().st_mtime_ns if result.is_file() else 0)


def pick(column) -> corpus.Corpus | None:
    """The result-folder widgets (in `column`); the folder's corpus, or None after telling the user what to do."""
    root, found = corpus_results.results_root(), corpus_results.find()
    typed = "" if limits.current().hosted else column.text_input(
        "Result folder", key="corpus_result", placeholder=str(root / "NAME"), **BIND,
        help="A folder written by python -m corpus_heads --out (docs/SCALE.md); empty: pick one found below.")
    if typed.strip():
        folder = Path(typed.strip()).expanduser()
    elif found:
        folder = st.selectbox(f"Results found in {root}", found, format_func=lambda p: p.name, key="corpus_found")
    else:
        st.info(f"No result folder in {root} yet: write one with `python -m corpus_heads --model bert --data FILE "
                f"--out {root / 'NAME'}` (docs/SCALE.md)" + ("." if limits.current().hosted else ", or type a "
                                                              "folder's path."))
        return None
    try:
        opened = _open(folder)
    except (OSError, UserError) as err:
        st.error(str(err) if isinstance(err, ValueError) else f"{folder} cannot be read: {err.strerror}.")
        return None
    meta = opened.meta
    st.caption(f"{folder.name}: {len(opened.sentences):,} sentences, {meta.get('model', '?')}, "
               f"{meta.get('engine', '?')} ({meta.get('workers', 1)} worker(s)), {meta.get('seconds', 0):.1f} s")
    return corpus.Corpus(f"{folder.name} (python -m corpus_heads)", opened.sentences, shipped=True, folder=str(folder))


def _switch(model: str) -> dict:
    """The sidebar's widgets for a model spec: {"model": "bert"} or {"model": "hf:", "hf_spec": "FOLDER"}."""
    if model.startswith(HF_PREFIX):
        return {"model": HF_PREFIX, "hf_spec": model[len(HF_PREFIX):]}
    return {"model": model}


def statistics(sel: Selection, picked: corpus.Corpus) -> Shard | None:
    """The folder's statistics when the sidebar's model is the one it was computed with, else None (after a
    sentence and a button that picks that model)."""
    opened = _open(Path(picked.folder))
    model = opened.meta.get("model")
    if model and model != sel.model:
        st.warning(f"These statistics were computed with {model}; the sidebar has {sel.model}. The view draws the "
                   "heads with the sidebar's model, so pick the same one.")
        st.button(f"Use {model}", key="corpus_result_model", icon="🔁", on_click=links.request,
                  args=("corpus", {}, _switch(model)))
        return None
    return opened.stats
