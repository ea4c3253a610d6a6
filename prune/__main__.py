"""python -m prune --model FOLDER --data FILE.csv --text-col text --label-col label --keep 0.9 --out PRUNED/

Loads the folder with its task head, reads the labelled rows, runs Michel et al.'s iterative plan against
one-pass, reverse and random orders, times the pruned model at your batch size and length, exports it
with its head and checks that the reloaded export predicts as the gated model did. Prints the plan, the
curve as a table, the speed-up and where it saved. The pruning view does the same and shows this line.
Problems with the model or the rows are one sentence on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import limits
from data.labelled import read_table
from experiments import own
from models import HF_PREFIX, task_head
from models.gates import head_counts
from models.prune import by_original, heads_in_original
from models.pruned_hf import load_line, pipeline_line


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m prune", description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="folder (or hub id) of a fine-tuned model with its head")
    p.add_argument("--data", required=True, help="labelled rows: .csv, .tsv or .jsonl")
    p.add_argument("--text-col", help="column of the text (guessed when left out)")
    p.add_argument("--label-col", help="column of the label (guessed when left out; none for language models)")
    p.add_argument("--pair-col", help="column of a second text or a question-answering context")
    d = own.Settings()
    p.add_argument("--keep", type=float, default=d.keep, help="keep at least this share of the metric")
    p.add_argument("--step", type=float, default=d.step, help="share of all heads removed per step")
    p.add_argument("--seeds", type=int, default=d.seeds, help="random orders on the curve")
    p.add_argument("--max-length", type=int, default=d.max_length, help="tokens per row")
    p.add_argument("--batch", type=int, default=d.batch, help="timing: rows per forward pass")
    p.add_argument("--seq-len", type=int, default=d.seq_len, help="timing: tokens per row")
    p.add_argument("--repeats", type=int, default=d.repeats, help="timing: interleaved runs per model")
    p.add_argument("--global-norm", action="store_true", help="min-max importance over all heads after per layer")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, help="torch threads (timing and sums depend on it)")
    p.add_argument("--out", help="folder for the pruned model (left out: no export)")
    return p.parse_args(argv)


def _table(rows: list[list], header: list[str]) -> str:
    """Rows as aligned text columns, numbers right-aligned."""
    cells = [header] + [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells)


def _threads(n: int) -> str:
    return f"{n} thread{'s' if n != 1 else ''}"


def _heads(plan: dict, model) -> str:
    """A plan (positions of the model as it is) by the original model's head numbers: an export loaded back holds
    fewer heads. {0: [1]} on an export that lost L0 H1 -> 'L0 H2'"""
    return ", ".join(f"L{layer} H{h}" for layer, h in heads_in_original(model, plan)) or "none"


def run(argv: list[str] | None = None, out=sys.stdout) -> dict:
    """The whole run; returns what it printed as numbers (the tests read them)."""
    a = _args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own progress goes to stderr; theirs would interleave with it
    say = lambda *parts: print(*parts, file=out, flush=True)  # noqa: E731
    if a.threads:
        import torch

        torch.set_num_threads(a.threads)  # own process: the command line, never the app
    s = own.Settings(keep=a.keep, step=a.step, seeds=a.seeds, max_length=a.max_length, batch=a.batch,
                     seq_len=a.seq_len, global_norm=a.global_norm, repeats=a.repeats)
    tm = task_head.load(a.model.removeprefix(HF_PREFIX), a.device)
    say(f"Model: {tm.spec}: {tm.label}.")
    path = Path(a.data)
    if not path.is_file():
        raise ValueError(f"There is no file {a.data!r}: give the path of a .csv, .tsv or .jsonl file.")
    table = read_table(path.read_bytes(), path.name, limits.current().pruning_upload_bytes)
    text, pair, label = own.columns(table, tm.kind)
    text, pair, label = a.text_col or text, a.pair_col or pair, a.label_col or label
    task = own.prepare(tm, table, text, label if tm.kind != "none" else None, pair, s)
    say(f"Data: {path.name}: text {text!r}" + (f", pair {pair!r}" if pair else "") + (
        f", label {label!r}" if tm.kind != "none" else "") + f"; {task.n_score} rows score the heads, "
        f"{task.n_eval} held-out rows measure {task.metric_name}.")
    for note in task.notices:
        say(f"Notice: {note}")
    steps = ("plan", "time") + (("export",) if a.out else ())
    say(f"Work: up to {own.check_budget(task, s, steps):,} rows through the model "
        f"(limit {limits.current().pruning_forward_passes:,}).")
    base = task.measure({})
    others = ", ".join(f"{k} {v:.3f}" for k, v in base.items() if k != task.metric_name)
    say(f"Metric: {task.metric_name} on {task.n_eval} held-out rows, every head on: {base[task.metric_name]:.3f} "
        f"({others}); chance {task.chance:.3f} ({task.chance_note}).")
    last = [-1]

    def progress(f: float, what: str) -> None:
        if int(f * 10) > last[0]:
            last[0] = int(f * 10)
            print(f"  {f:4.0%} {what}", file=sys.stderr, flush=True)

    res = own.run_plan(task, s, progress)
    imp = by_original(tm.model, res.importance)  # (L, original heads): an export loaded back keeps its numbers
    say("\nImportance (mean |dL/dξ| over the scoring rows, l2-normalised per layer"
        + (", then min-max over all heads" if s.global_norm else "") + "):")
    say(_table([[f"L{l}"] + [float(v) if v != float("inf") else "" for v in imp[l]] for l in range(len(imp))],
               [""] + [f"H{h}" for h in range(imp.shape[1])]))
    direction = "at least" if task.higher_better else "at most"
    say(f"\nCurve ({task.metric_name}; a plan keeps {direction} {res.threshold:.3f} = keep {s.keep:g} of "
        f"{res.base:.3f}; chance {task.chance:.3f}):")
    say(_table([[r["removed"], f"{r['% removed']:g}%", r["iterative"], r["one-pass"], r["reverse"],
                 f"{r['random mean']:.3f} ± {r['random std']:.3f}"] for r in res.table()],
               ["removed", "%", "iterative", "one-pass", "reverse", f"random ({s.seeds} seeds)"]))
    n_off, n = sum(map(len, res.plan.values())), sum(head_counts(tm.model))
    say(f"\nPlan ({res.recommended}, recommended): remove {n_off} of {n} heads: {_heads(res.plan, tm.model)}; "
        f"{task.metric_name} {res.value:.3f} ({task.kept(res.value, res.base):.1%} of the original).")
    t = own.prune_and_time(task, res.plan, s)
    shape, way = own.timing_words(t, s.seq_len)
    say(f"\nSpeed at {shape} on {t['device']} ({_threads(t['threads'])}), median "
        f"of {t['repeats']} interleaved runs: full {t['full_ms']:.2f} ms (IQR {t['full_iqr_ms']:.2f}), pruned "
        f"{t['pruned_ms']:.2f} ms (IQR {t['pruned_iqr_ms']:.2f}): {way}.")
    saved = t["params_full"] - t["params_pruned"]
    say(f"Saved {saved:,} of {t['params_full']:,} parameters ({saved / t['params_full']:.1%}), "
        f"{(t['bytes_full'] - t['bytes_pruned']) / 1e6:.2f} of {t['bytes_full'] / 1e6:.2f} MB, here:")
    say(_table([[r["layer"], r["heads"], r["kept"], r["params_saved"]] for r in t["layers"]],
               ["layer", "heads", "kept", "parameters saved"]))
    check = None
    if a.out:
        check = own.export_and_check(task, res.plan, a.out)
        verdict = "equal" if check["same"] == check["predictions"] else "DIFFER from"
        say(f"\nExport: {a.out} ({', '.join(check['files'])}); transformers.{check['auto']}.from_pretrained "
            f"rebuilds it as {check['class']}; its predictions {verdict} the gated model's on "
            f"{check['same']}/{check['predictions']} held-out predictions (max |Δ| {check['max_diff']:.1e}, "
            "float64 on the cpu).")
        say(f"Load it anywhere transformers is (this project not needed): {load_line(check['auto'])}")
        say(f"or serve it: {pipeline_line(check['auto'])}")
    return {"task": task, "plan": res, "timing": t, "check": check}


def main() -> None:
    try:
        run()
    except ValueError as err:
        print(f"prune: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
