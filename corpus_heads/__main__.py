"""python -m corpus_heads --model MODEL --data FILE [--text-col COL] --out DIR [--ray auto|ADDRESS] [--device cuda]

"Heads across a corpus" without the app: every head's behaviours, search index and Jensen-Shannon sums over the
sentences of FILE (.txt: split into sentences; .csv, .tsv, .jsonl: the text column, split the same way), written
to DIR as a result folder (experiments.corpus_results) that the corpus view lists and opens.

Without --ray it runs in this process, exactly as the app does (experiments.corpus.run, shard by shard into
DIR/shards). With --ray it runs on Ray Data (corpus_heads.on_ray): one actor per worker loads the model once,
each computes whole shards with the same experiments.corpus.shard_stats, and this process merges them with the
same analysis.corpus_stats.merge, so both give the same statistics. Problems with the model or the file are
one sentence on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import limits
from data import corpus, text
from data.labelled import TEXT_NAMES, guess, read_table
from experiments import corpus as ec
from experiments import corpus_results

TABLES = (".csv", ".tsv", ".jsonl", ".json")


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m corpus_heads", description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a registry key (bert, gpt, ...) or hf:<folder or hub id>")
    p.add_argument("--data", required=True, help="sentences: .txt, or a table (.csv, .tsv, .jsonl) with --text-col")
    p.add_argument("--text-col", help="the table's column of text (guessed when left out)")
    p.add_argument("--out", required=True, help="the result folder to write")
    p.add_argument("--ray", metavar="auto|ADDRESS", help="run on Ray: auto (the cluster `ray start` made here, "
                   "else a new local one) or a cluster's address, e.g. 10.0.0.5:6379")
    p.add_argument("--workers", type=int, help="Ray workers, one model each (default: the cluster's CPUs, or GPUs)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (on Ray: one GPU per worker)")
    p.add_argument("--threads", type=int, help="torch threads of this process (a Ray worker uses its CPUs)")
    p.add_argument("--max-sentences", type=int, help="use the first N sentences")
    return p.parse_args(argv)


def read_sentences(path: Path, text_col: str | None = None, max_sentences: int | None = None) -> tuple[str, ...]:
    """The corpus of a file, read and split as the app reads an upload (data.corpus.from_lines), without the
    app's size caps; ValueError with one sentence when it cannot be used."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ValueError(f"Cannot read {path}: {err.strerror}.") from None
    if path.suffix.lower() in TABLES:
        table = read_table(data, path.name, len(data) + 1)
        col = text_col or guess(table.columns, TEXT_NAMES)
        if col not in table.columns:
            raise ValueError(f"{path.name} has no column {col!r}: pick one of {', '.join(table.columns)} with "
                             "--text-col." if col else f"Say which column holds the text with --text-col "
                             f"({', '.join(table.columns)}).")
        lines = [row[col] for row in table.rows if row[col].strip()]
    else:
        lines, _ = text.read_upload(data, len(data) + 1)
    most = max_sentences or len(data) + 1
    return corpus.from_lines(path.name, lines, most, limits.current().corpus_sentence_chars).sentences


def run(argv: list[str] | None = None, out=sys.stdout) -> dict:
    """Compute and write the result folder; its meta (what meta.json holds)."""
    args = _args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)  # own process: a command line
    sentences = read_sentences(Path(args.data), args.text_col, args.max_sentences)
    folder = Path(args.out)
    shards = folder / corpus_results.SHARDS
    print(f"{len(sentences):,} sentences, {-(-len(sentences) // ec.SHARD):,} shards of {ec.SHARD}", file=out)
    start = time.perf_counter()
    if args.ray:
        from corpus_heads import on_ray

        stats, model_id, workers, nodes = on_ray.run(args.model, args.device, sentences, shards, args.ray, args.workers,
                                              progress=lambda d, t: print(f"{d:,} of {t:,}", file=out, flush=True))
        engine = "ray"
    else:
        import models

        model = models.load(args.model, device=args.device)
        model_id = ec.identity(model)
        result = ec.run(model, sentences, folder=shards, max_bytes=1 << 62, model_id=model_id,
                        progress=lambda d, t: print(f"{d:,} of {t:,}", file=out, flush=True))
        stats, engine, workers, nodes = result.stats, "local", 1, 1
    seconds = time.perf_counter() - start
    meta = {"model": args.model, "device": args.device, "data": str(args.data),
            "shards": -(-len(sentences) // ec.SHARD), "engine": engine, "workers": workers, "nodes": nodes,
            "seconds": round(seconds, 3), "model_id": model_id}
    corpus_results.write(folder, stats, sentences, meta)
    n_layers, n_heads = stats.shape
    print(f"{engine}: {len(stats.tokens):,} sentences × {n_layers * n_heads:,} heads in {seconds:.1f} s "
          f"({workers} worker{'s' if workers != 1 else ''}) -> {folder}", file=out)
    return {**meta, "sentences": len(sentences)}


def main() -> None:
    try:
        run()
    except ValueError as err:
        print(err, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
