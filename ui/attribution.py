"""The attribution view's glue: which model explains, its rows, the work a request asks for, cached results.

The sidebar's model comes from ui.runtime.cache, an `hf:` folder with the head it was fine-tuned with (a sequence
classifier's class is explained, models.load keeps the head). Rows over which
faithfulness is measured: the built-in ones (generated reviews for a classifier, the paraphrase pairs for
MiniLM, their first sentences for a decoder) or a user's labelled file (text column, optional second text).
One text: everything on a laptop; in hosted mode the cheap methods first and the rest when asked (text_results).
Does not: run anything heavy on the script thread but one text; rows run as a job (run_rows, through
ui.runtime.heavy.run).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

import limits
from data import paraphrases, reviews
from data.labelled import PAIR_NAMES, TEXT_NAMES, guess
from experiments.attribution import LABELS, attribute_all
from experiments.explained import explain
from experiments.faithfulness import FRACTIONS, Faithfulness, measure, score_row
from limits import memory
from limits.errors import UserError
from ui.runtime import cache, heavy
from ui.show import plot
from ui.state import Selection, uploaded_table
from viz.attribution import tau_matrix

MAX_ROWS = 200


def model_of(sel: Selection):
    """The sidebar's model as attribution takes it (UserError: one sentence)."""
    return cache.model(sel.model, sel.device, sel.dtype)


MAX_TOKENS = 128  # one text in the page: its work grows with its length, so the length is bounded


class TooLong(UserError):
    """The text is longer than one text in the page may be (MAX_TOKENS): a limit, not a mistake."""


ON_REQUEST = ("best_head", "integrated_gradients", "occlusion")  # hosted: computed when asked (text_results)


def _prepared(model: str, device: str, dtype: str, text: str, text_b: str | None, methods: tuple):
    """(the explained prediction, the methods it can take, notes); TooLong over MAX_TOKENS, flow left out over
    limits.current().flow_tokens tokens (one maximum flow per token pair), with a note."""
    from ui.state import Selection as S

    ex = explain(model_of(S(text, text_b, model, device, dtype)), text, None, text_b)
    if len(ex.tokens) > MAX_TOKENS:  # occlusion runs the model once per token, the erasure curves 10 times a method
        raise TooLong(f"Attribution explains texts of up to {MAX_TOKENS} tokens here (occlusion runs the model "
                      f"once per token); this one has {len(ex.tokens)}: shorten it.")
    cap, notes = limits.current().flow_tokens, ()
    if "flow" in methods and len(ex.tokens) > cap:
        methods = tuple(x for x in methods if x != "flow") or ("random",)
        notes = (f"Exact flow runs one maximum flow per token pair, so it is computed up to {cap} tokens; this text "
                 f"has {len(ex.tokens)}: shorten it to see flow.",)
    return ex, methods, notes


@cache.memo("results", spinner="Attributing with every method…")
def one_text(model: str, device: str, dtype: str, text: str, text_b: str | None, methods: tuple, steps: int,
             baseline: str):
    """(explained number's sentence, {method: Attribution}, faithfulness on this one text, notes). The methods
    quick_text kept for the same arguments (a hosted visit before its button) are taken from it, not computed
    again: the same numbers, as both run attribute_all on the same explained prediction."""
    found, quick = quick_text.peek(model, device, dtype, text, text_b, methods, steps, baseline)
    ex, methods, notes = _prepared(model, device, dtype, text, text_b, methods)
    have = {m: a for m, a in quick[1].items() if m in methods} if found else {}
    rest = tuple(m for m in methods if m not in have)
    made = attribute_all(ex, rest, steps, baseline) if rest else {}
    atts = {m: have[m] if m in have else made[m] for m in methods}
    one = Faithfulness(tuple(x for x in methods if x != "best_head"), FRACTIONS)  # the attributions just made
    score_row(one, ex, atts)
    memory.release_freed(collect=True)  # integrated gradients' batches: ~100 MB for MiniLM at 64 steps
    return ex.what, atts, one, notes


@cache.memo("results")
def quick_text(model: str, device: str, dtype: str, text: str, text_b: str | None, methods: tuple, steps: int,
               baseline: str):
    """one_text without the methods of ON_REQUEST and without faithfulness (None in its place): what a hosted
    visit draws before anyone asks for more (a forward, the attention and one backward; random if nothing else)."""
    ex, methods, notes = _prepared(model, device, dtype, text, text_b, methods)
    atts = attribute_all(ex, tuple(m for m in methods if m not in ON_REQUEST) or ("random",), steps, baseline)
    memory.release_freed(collect=True)  # integrated gradients' batches: ~100 MB for MiniLM at 64 steps
    return ex.what, atts, None, notes


def text_results(args: tuple):
    """one_text(*args) on a laptop, or when this session asked for it (ask_button) or it is kept already; else, in
    hosted mode, quick_text(*args): integrated gradients (64 steps are ~200 passes through the model), occlusion
    and the erasure curves wait for the button. What is asked waits its turn among the server's heavy requests
    (ui.runtime.heavy.run), saying for how many."""
    full = heavy.run("attr_full", one_text.key(*args), "Attributing with every method…",
                     lambda progress: one_text.uncached(*args), ask=_asking(args), thread=False, place=False)
    return quick_text(*args) if full is None else full


def _asking(args: tuple) -> heavy.Ask:
    """The hosted button that asks for the rest of text_results(args), named after what it adds: 'Integrated
    gradients (64 steps), occlusion, best head and faithfulness on this text'."""
    names = {"integrated_gradients": f"Integrated gradients ({args[6]} steps)", "occlusion": "occlusion",
             "best_head": "best head"}
    parts = [names[m] for m in names if m in args[5]] + ["faithfulness on this text"]
    label = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
    return heavy.Ask("attr_full", label[0].upper() + label[1:], hosted_only=True,
                     help="Each runs the model hundreds of times; the server runs such requests one at a time.",
                     caption="On this server the page draws the cheap methods first: the button adds the gradient "
                             "and occlusion methods and the erasure scores on this text, as the model computes them.")


def ask_button(args: tuple) -> None:
    """text_results' button, drawn under the cheap methods' figure (hosted mode, before it was asked)."""
    heavy.button("attr_full", one_text.key(*args), _asking(args))


def builtin_rows(m, n: int) -> tuple[list[dict], str]:
    """(n built-in rows for this model, what they are)."""
    if m.predicts == "class":
        return ([{"text": r["text"]} for r in reviews.rows(n, seed=1)],
                "generated reviews (data/reviews.py), the task the app's own classifiers learn")
    pairs = paraphrases.load_pairs()[:n]
    if m.family == "encoder":
        return [{"text": a, "text_b": b} for a, b in pairs], "the paraphrase pairs of the pruning view's MiniLM task"
    return [{"text": a} for a, _ in pairs], "the first sentences of the built-in paraphrase pairs"


def csv_rows(up, key: str) -> list[dict] | None:
    """Rows of an uploaded file (text column, optional second text), or None after saying why not."""
    try:
        table = uploaded_table(up.getvalue(), up.name, "_attr_table")
    except UserError as err:
        st.error(str(err))
        return None
    cols = list(table.columns)
    c1, c2 = st.columns(2)
    text = c1.selectbox("Text column", cols, index=cols.index(guess(cols, TEXT_NAMES, cols[0])), key=f"{key}_text")
    pairs = ["(none)", *cols]
    pair = c2.selectbox("Second text column", pairs, index=pairs.index(guess(cols, PAIR_NAMES, "(none)")),
                        key=f"{key}_pair")
    try:
        return rows_of(table, text, None if pair == "(none)" else pair)
    except UserError as err:
        st.error(str(err))
        return None


def rows_of(table, text: str, pair: str | None) -> list[dict]:
    """The rows with a text (at most MAX_ROWS), or ValueError. rows_of(t, "text", None) -> [{"text": …}, …]"""
    rows = [{"text": r[text], "text_b": (r.get(pair) if pair else None) or None} for r in table.rows
            if r.get(text, "").strip()]
    if not rows:
        raise UserError(f"No row of this file has a text in column '{text}': choose the column that holds the texts.")
    return rows[:MAX_ROWS]


def cost(rows: int, tokens: int, methods, steps: int) -> int:
    """Rows through the model one request asks for (a backward counts 2): per row its text, the baseline, the
    attention, IG's steps, gradient × input, one deletion per token (occlusion), 2 per fraction per method."""
    per = 3 + 3 * steps + 3 + tokens + 2 * len(FRACTIONS) * len(methods)
    return rows * per


def run_rows(progress, sel: Selection, rows: list[dict], methods: tuple, steps: int, baseline: str):
    """The job: faithfulness over rows, with the head map (a job of ui.runtime.heavy.run)."""
    m = model_of(sel)
    return measure(m, rows, methods, FRACTIONS, steps, baseline, heads=True, progress=progress,
                   flow_tokens=limits.current().flow_tokens)


def faithfulness_here(one: Faithfulness, shown: list[str], ordinary: int, value: str) -> None:
    """The 'Faithfulness on this text' section: AOPC per method, and Kendall tau between methods."""
    summary = pd.DataFrame([{"method": LABELS[m], **{k: round(v, 4) for k, v in one.summary[m].items()}}
                            for m in shown])
    st.header("Faithfulness on this text")
    shares = ", ".join(f"{f:.0%}" for f in FRACTIONS)
    st.caption(f"AOPC over deleting (comprehensiveness) or keeping only (sufficiency) the top {shares} of the "
               f"{ordinary} ordinary tokens; drop in the {value} of what is explained.")
    st.dataframe(summary, hide_index=True, width="stretch")  # the whole width: every column in sight
    if len(shown) > 1:
        plot(tau_matrix(one.tau_matrix(), shown, LABELS, "Kendall τ between methods, this text"),
             "attribution-tau-text", key="attr_tau_one")
