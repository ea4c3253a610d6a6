"""The pruning view's "your model on your data" part: your folder's task head, your labelled rows, Michel et al.'s
iterative plan against other orders, timing at your batch size and length, and an export that reloads.

Everything heavy runs in experiments.own; this file asks for it, caches it and shows it. Work is counted
before it starts and refused over the hosting caps; the plan and the timing move a progress bar and can be
cancelled (the Cancel button's rerun stops the run at its next progress step, and switches its toggle off).
Does not: keep uploaded files beyond the session, or run anything before its toggle is on.
"""
from __future__ import annotations

import hashlib
import io
import os
import tempfile
import zipfile

import streamlit as st

import limits
from experiments import own
from experiments.own_task import METRICS
from experiments.pruning import in_original_numbers
from limits.errors import UserError
from models import HF_PREFIX, task_head
from models.prune import heads_in_original
from models.pruned_hf import load_code
from ui.runtime import cache
from ui.show import plot
from ui.state import BIND, MODEL_LABELS, uploaded_table
from viz.pruning import importance_grid, plan_curve

BOUND = BIND


def labelled_head(model: str) -> bool:
    """Whether the sidebar's model is a local folder whose config names a head that needs labelled rows
    (classification, question answering): the built-in tasks could not use that head."""
    import json

    path = os.path.join(model[len(HF_PREFIX):], "config.json")
    if not model.startswith(HF_PREFIX) or not limits.current().local_models or not os.path.isfile(path):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            head = task_head.head_of(json.load(f).get("architectures"))[1]
    except (UserError, json.JSONDecodeError, OSError):
        return False
    return head.endswith("classification") or head == "question answering"


def _pct(v: float, higher_better: bool) -> str:
    return f"{v:.1%}" if higher_better else f"{v:.3g}"


def _cancel(key: str) -> None:
    st.session_state[key] = False


def _running(key: str, label: str):
    """A progress bar with a Cancel button; returns (progress callback, a function that clears both)."""
    bar, stop = st.progress(0.0, text=label), st.empty()
    stop.button("Cancel", key=f"{key}_cancel", on_click=_cancel, args=(key,), icon="✖️")

    def clear() -> None:
        bar.empty()
        stop.empty()
    return (lambda f, what: bar.progress(f, text=what)), clear


def _zip(folder: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in sorted(os.listdir(folder)):
            z.write(os.path.join(folder, name), name)
    return buf.getvalue()


def render(sel) -> None:
    if not sel.model.startswith(HF_PREFIX) or not sel.model[len(HF_PREFIX):]:
        where = "folder or hub id" if limits.current().local_models else "hub id"
        st.info(f"Your own model comes in through the sidebar: choose '{HF_PREFIX}' in its Model box "
                f"({MODEL_LABELS[HF_PREFIX]}) and give the {where} of a fine-tuned model with its head "
                "(e.g. BertForSequenceClassification).")
        return
    spec = sel.model[len(HF_PREFIX):]
    try:
        tm = cache.task_model(spec, sel.device, sel.dtype)
    except UserError as err:
        st.error(str(err))
        return
    st.caption(f"Found {tm.label}. Its own loss ({tm.head}) scores the heads.")
    kinds = {"class": "a label per row", "tags": "one tag per word, space-separated", "span": "the answer, "
             "as it occurs in a context column", "none": "no label: the text is its own target"}
    up = st.file_uploader(f"Your rows: .csv, .tsv or .jsonl with a header; {kinds[tm.kind]}",
                          type=["csv", "tsv", "jsonl", "json"], key="prune_own_file")
    if up is None:
        st.info(f"Upload {'rows of text' if tm.kind == 'none' else 'labelled rows'} to score the heads on your task "
                "(the file stays in this session only).")
        return
    try:
        table = uploaded_table(up.getvalue(), up.name, "_prune_own_table")
    except UserError as err:
        st.error(str(err))
        return
    text0, pair0, label0 = own.columns(table, tm.kind)
    cols, pairs = list(table.columns), ["(none)"] + list(table.columns)
    for k, options in (("prune_own_text", cols), ("prune_own_label", cols), ("prune_own_pair", pairs)):
        if st.session_state.get(k, options[0]) not in options:  # another file: its columns differ
            del st.session_state[k]
    c1, c2, c3 = st.columns(3)
    text = c1.selectbox("Text column", cols, index=cols.index(text0), key="prune_own_text", **BOUND)
    label = c2.selectbox("Label column", cols, index=cols.index(label0), key="prune_own_label", **BOUND) \
        if tm.kind != "none" else None
    pair = c3.selectbox("Second text / context column", pairs, index=pairs.index(pair0 or "(none)"),
                        key="prune_own_pair", **BOUND)
    pair = None if pair == "(none)" else pair
    caps = limits.current()
    c1, c2, c3, c4 = st.columns(4)
    keep = c1.slider("Keep at least this share of the metric", 0.5, 1.0, 0.9, 0.01, key="prune_own_keep", **BOUND)
    step = c2.select_slider("Heads removed per step", [0.05, 0.1, 0.2, 0.25], 0.1, format_func="{:.0%}".format,
                            key="prune_own_step", **BOUND)
    seeds = c3.slider("Random orders (seeds)", 2, 6, 3, key="prune_own_seeds", **BOUND)
    rows_len = own.token_choices(tm, [32, 64, 128, 256, 512], caps.pruning_row_tokens)  # what the model embeds
    time_len = own.token_choices(tm, [16, 32, 64, 128, 256, 512])
    for k, options in (("prune_own_len", rows_len), ("prune_own_seq", time_len)):
        if st.session_state.get(k, options[0]) not in options:  # a link from a longer model: its value is not offered
            del st.session_state[k]
    max_length = c4.select_slider("Tokens per row", rows_len, min(128, rows_len[-1]), key="prune_own_len", **BOUND,
                                  help=f"Longer rows are cut; up to {rows_len[-1]}, the most this model embeds here.")
    global_norm = c1.checkbox("Also min-max over all heads", False, key="prune_own_global", **BOUND,
                              help="After the per-layer l2 (Michel et al.); it changes colours, never the order.")
    batch = c2.select_slider("Timing: batch size", [1, 2, 4, 8, 16, 32, 64], 16, key="prune_own_batch", **BOUND)
    seq_len = c3.select_slider("Timing: tokens per row", time_len, min(128, time_len[-1]), key="prune_own_seq",
                               **BOUND)
    s = own.Settings(keep=keep, step=step, seeds=seeds, max_length=max_length, batch=batch, seq_len=seq_len,
                     global_norm=global_norm)
    digest = hashlib.sha256(up.getvalue()).hexdigest()[:16]
    key = (sel.model, sel.device, sel.dtype, digest, text, label, pair, s.max_length)
    try:
        with st.spinner("Reading your rows and measuring the metric with every head…"):
            # the prepared task holds your model: kept beside it in the model store
            task = cache.kept(("own-task", key), lambda: own.prepare(tm, table, text, label, pair, s), "models",
                              heavy=True)
            base = cache.kept(("own-base", key), lambda: task.measure({}), heavy=True)
    except UserError as err:
        st.error(str(err))
        return
    for note in task.notices:
        st.warning(note)
    name, higher, other = METRICS[tm.head]
    st.markdown(f"**Task:** your rows through the model's own {tm.head} loss. **Metric:** {name} on "
                f"{task.n_eval} held-out rows ({task.n_score} others score the heads); with every head on "
                f"**{_pct(base[name], higher)}** ({other} {_pct(base[other], higher)}); **chance:** "
                f"{_pct(task.chance, higher)} ({task.chance_note}).")
    st.code(own.command(spec, up.name, text, label, pair, s), language="bash", wrap_lines=True)
    try:
        need = own.check_budget(task, s, ("plan",))
    except UserError as err:
        st.error(str(err))
        return
    # not in the link: a link brings no file, so its run could never start (it was "a link parameter not used")
    if not st.toggle(f"Run the plan: up to {need:,} rows through the model (limit {caps.pruning_forward_passes:,})",
                     key="prune_own_run"):
        return
    progress, clear = _running("prune_own_run", "Scoring heads on your rows…")
    res = cache.kept(("own-plan", key, s), lambda: own.run_plan(task, s, progress), heavy=True)
    clear()
    show_plan(task, res, s)
    show_export(task, res, s, key)


def show_plan(task, res, s) -> None:
    n = sum(res.counts)
    name, higher = task.metric_name, task.higher_better
    _, _, importance, _ = in_original_numbers(task.tm.model, res.importance)  # an export loaded back keeps them
    plot(importance_grid(importance, None, set(), "importance"), "own-importance", key="prune_own_grid")
    plot(plan_curve(res.sizes, n, {"iterative": res.iterative, "one-pass": res.one_pass, "reverse": res.reverse},
                    res.random, name, task.chance, res.threshold, sum(map(len, res.plan.values())), res.value),
         "own-pruning-curve", key="prune_own_curve")
    removed = ", ".join(f"L{layer} H{h}" for layer, h in heads_in_original(task.tm.model, res.plan)) or "none"
    kept = task.kept(res.value, res.base)
    score = (f"{name} {_pct(res.value, higher)}, {kept:.1%} of {_pct(res.base, higher)} with every head" if higher
             else f"{name} {_pct(res.value, higher)} against {_pct(res.base, higher)} with every head (lower is "
                  f"better): it keeps {kept:.1%} of the model's quality, that {name} ÷ this one")
    st.success(f"Recommended ({res.recommended}): remove {sum(map(len, res.plan.values()))} of {n} heads "
               f"({removed}); {score} (the plan must keep {s.keep:.0%}).")
    if warn := task.below_chance(res.base):
        st.warning(warn)
    st.dataframe([{k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()} for row in res.table()],
                 hide_index=True)


def show_export(task, res, s, key) -> None:
    """Prune, time and export (the timing's tokens per row were offered only up to what the model embeds)."""
    if not res.plan:
        st.info("No head can go without falling below the threshold: there is nothing to export.")
        return
    try:
        need = own.check_budget(task, s, ("time", "export"))
    except UserError as err:
        st.error(str(err))
        return
    if not st.toggle(f"Prune, time and export: up to {need:,} rows through the model", key="prune_own_export"):
        return
    progress, clear = _running("prune_own_export", "Pruning, timing and exporting…")

    def compute():
        t = own.prune_and_time(task, res.plan, s, lambda f: progress(0.8 * f, "Timing the full and the pruned "
                                                                              "model, interleaved…"))
        progress(0.8, "Exporting and reloading the pruned model…")
        with tempfile.TemporaryDirectory() as folder:
            check = own.export_and_check(task, res.plan, folder)
            return t, check, _zip(folder)
    t, check, blob = cache.kept(("own-export", key, s, repr(sorted(res.plan.items()))), compute,  # the zip counted
                                heavy=True)
    clear()
    st.dataframe([{"model": "full", "median (ms)": round(t["full_ms"], 2), "IQR (ms)": round(t["full_iqr_ms"], 2),
                   "parameters": t["params_full"], "MB": round(t["bytes_full"] / 1e6, 2)},
                  {"model": "pruned", "median (ms)": round(t["pruned_ms"], 2),
                   "IQR (ms)": round(t["pruned_iqr_ms"], 2), "parameters": t["params_pruned"],
                   "MB": round(t["bytes_pruned"] / 1e6, 2)}], hide_index=True)
    threads = f"{t['threads']} thread{'s' if t['threads'] != 1 else ''}"
    shape, way = own.timing_words(t)
    st.caption(f"{shape.capitalize()} on {t['device']} ({threads}): median of {t['repeats']} interleaved runs each "
               f"after warm-up, {way}. Saved per layer: "
               + ", ".join(f"L{r['layer']} {r['heads']}→{r['kept']} heads ({r['params_saved']:,} parameters)"
                           for r in t["layers"]) + ".")
    st.caption(f"Reloaded with transformers.{check['auto']}.from_pretrained as {check['class']}: "
               f"{check['same']}/{check['predictions']} predictions on the held-out rows equal the gated model's, "
               f"largest difference {check['max_diff']:.1e} (float64 on the cpu).")
    st.download_button("Pruned model with its head (.zip)", blob, "pruned_model.zip", key="prune_own_zip",
                       help="config.json (model type pruned-…, auto_map), model.pruned.safetensors, "
                            "modeling_pruned.py, tokenizer, plan.json and a README with the loading line.")
    st.caption("Unzip it to a folder OUT and load it anywhere transformers is, without this project:")
    st.code(load_code(check["auto"]), language="python", wrap_lines=True)

