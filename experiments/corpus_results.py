"""Result folders of "Heads across a corpus" computed away from the app (python -m corpus_heads): write, find, read.

A result folder holds what the corpus view needs to open a run without the model running again:

    DIR/result.npz      the merged statistics (analysis.corpus_stats.to_arrays: plain arrays, no pickle)
    DIR/sentences.txt   the corpus, one sentence a line, in corpus order (the view draws a head on one of them)
    DIR/meta.json       {"model", "device", "sentences", "shards", "engine", "workers", "seconds", "model_id"}
    DIR/shards/*.npz    one file per SHARD sentences, named and written exactly as experiments.corpus.run
                        caches them (so the app's cache can take them as they are)

Does not compute statistics (experiments.corpus does) and knows nothing of Ray or of Streamlit.

    write(Path("out"), stats, sentences, {"model": "bert"}); read(Path("out")).meta["model"] -> "bert"
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis import corpus_stats
from analysis.corpus_stats import Shard
from limits.errors import UserError

RESULTS_ENV = "ATTENTION_EXPLORER_RESULTS"
RESULT, SENTENCES, META, SHARDS = "result.npz", "sentences.txt", "meta.json", "shards"


@dataclass(frozen=True)
class Opened:
    folder: Path
    stats: Shard
    sentences: tuple[str, ...]
    meta: dict


def results_root() -> Path:
    """Where the corpus view looks for result folders: $ATTENTION_EXPLORER_RESULTS, else
    ~/.cache/attention-explorer/results."""
    return Path(os.environ.get(RESULTS_ENV) or Path.home() / ".cache" / "attention-explorer" / "results")


def write(folder: Path, stats: Shard, sentences, meta: dict) -> Path:
    """Write the merged statistics, the sentences and meta into folder (made when missing); the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / RESULT, "wb") as f:
        np.savez_compressed(f, **corpus_stats.to_arrays(stats))
    (folder / SENTENCES).write_text("".join(s.replace("\n", " ") + "\n" for s in sentences), encoding="utf-8")
    (folder / META).write_text(json.dumps({**meta, "sentences": len(sentences)}, indent=2) + "\n")
    return folder


def find(root: Path | None = None) -> list[Path]:
    """Result folders directly under root (or root itself when it is one), newest first."""
    root = root or results_root()
    if (root / RESULT).is_file():
        return [root]
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if (p / RESULT).is_file() and (p / META).is_file()]
    return sorted(found, key=lambda p: (p / RESULT).stat().st_mtime, reverse=True)


def read(folder: Path) -> Opened:
    """A result folder's statistics, sentences and meta; ValueError with one sentence when it is not one."""
    folder = Path(folder).expanduser()
    if not (folder / RESULT).is_file():
        raise UserError(f"{folder} holds no {RESULT}: give a folder written by python -m corpus_heads --out.")
    try:
        with np.load(folder / RESULT, allow_pickle=False) as arrays:
            stats = corpus_stats.from_arrays(arrays)
        meta = json.loads((folder / META).read_text()) if (folder / META).is_file() else {}
        sentences = tuple((folder / SENTENCES).read_text(encoding="utf-8").splitlines())
    except (OSError, KeyError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{folder} could not be read ({type(err).__name__}): write it again with "
                        "python -m corpus_heads.") from None
    if len(sentences) <= int(stats.index.max(initial=-1)):
        raise UserError(f"{folder}/{SENTENCES} has {len(sentences):,} lines, fewer than the statistics cover: "
                        "write the folder again with python -m corpus_heads.")
    return Opened(folder, stats, sentences, meta)
