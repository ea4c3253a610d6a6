"""The Patching view's glue: a minimal pair per model, the work it asks for, the job that patches, the links out.

The patching itself is experiments.patching; this module picks default texts the model really answers (checked
on the shipped weights: see tests/views/test_page_patching.py), counts the sequences a request runs for the work
budget, runs heads and residual patching as one job with progress (ui.runtime.heavy), keeps the result in the results
store, and turns a clicked cell into the Inside a head view's settings.
"""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

import limits
from data.induction import PATCH_PAIR
from experiments import patching
from limits.errors import UserError
from models.internals import inside_head_refusal
from ui.classroom import links
from ui.runtime import cache, heavy, work
from viz.patching import row_label


@dataclass(frozen=True)
class Pair:
    clean: str
    corrupt: str
    answer: str
    wrong: str
    why: str  # what the model does on it, in words


# the built-in `gpt` was trained on Python's documentation: ' John' is four tokens and ' Mary' two there, and on
# IOI-style pairs of one-token words it prefers neither; it does copy a function's argument after `return <arg> *`:
# +1.14 for ' name' over ' path' when the argument is `name`, -3.14 when it is `path`
PAIRS = {
    "gpt": Pair("def area(name): return name *", "def area(path): return path *", " name", " path",
                "after `return name *` it expects the argument `name` again"),
    "tiny": Pair("31415", "38495", "1", "3", "the first digit of the sorted answer is the smallest digit"),
    "induction": Pair(*PATCH_PAIR, "an induction head copies the syllable that followed the earlier 'ba'"),
    # one character per token; it writes 2021-03-03 and 1921-03-03: +10.3 for '2' over '1', then -10.0
    "seq2seq-transformer": Pair("Wednesday, the 3rd of March 2021", "Wednesday, the 3rd of March 1921", "2", "1",
                                "the first digit it writes is the year's first: 2 for 2021, 1 for 1921"),
}
IOI = Pair("When Mary and John went to the store, John gave a drink to",
           "When Mary and John went to the store, Mary gave a drink to", " Mary", " John",
           "the indirect object (IOI, Wang et al. 2023): the name that did not give")
# the same pair for a tokenizer that writes one character per token (' Mary' is five there): the name's first letter
IOI_LETTERS = Pair(IOI.clean, IOI.corrupt, "M", "J", "the indirect object's first letter, one character per token")
FALLBACKS = (IOI, IOI_LETTERS)  # for any other model: the first whose texts and answers fit its tokenizer
KEYS = ("patch_clean", "patch_corrupt", "patch_answer", "patch_wrong")
_EXAMPLE = "_patch_example"  # session key: the example pair the boxes were last given (clean, corrupt, answer, wrong)
JOB = "patching"
INLINE_ROWS = 200  # sequences a request may run in the page itself; more run as a job with progress and Cancel
# Inside a head's settings for a model: (its model radio's label, layer key, head key, text key or None: sidebar)
INSIDE = {"gpt": ("GPT (Llama-style)", "ih_bert_layer", "ih_bert_head", None),
          "tiny": ("Tiny decoder", "ih_tiny_layer", "ih_tiny_head", "ih_digits"),
          "induction": ("Induction (attention-only)", "ih_ind_layer", "ih_ind_head", None)}


def pair_for(model_key: str, model) -> Pair:
    """The example pair for a model: its own where it has one, else the first that lines up in its tokenizer
    (experiments.patching.lined_up) of a review in its own labels (a classifier) and FALLBACKS (a masked LM's with its
    mask where the answer goes), so that the default never asks for a pair of one's own; IOI where none does (the view
    then says why)."""
    if model_key in PAIRS:
        return PAIRS[model_key]
    labels, mask = patching.class_labels(model), patching.mask_of(model)
    fallbacks = [Pair(f"{p.clean} {mask}", f"{p.corrupt} {mask}", p.answer, p.wrong, f"{p.why}, at the mask")
                 for p in FALLBACKS] if mask else list(FALLBACKS)  # a masked LM: the answer goes at its mask
    for pair in ([_review(labels)] if labels and len(labels) > 1 else []) + fallbacks:
        try:
            patching.lined_up(model, pair.clean, pair.corrupt, pair.answer, pair.wrong)
        except UserError:
            continue
        return pair
    return IOI


def _review(labels: list[str]) -> Pair:
    """A classifier's example: its last label against its first (a sentiment classifier's positive and negative) on a
    review whose one word changes, the same number of tokens in any tokenizer that keeps a word whole."""
    return Pair("The film was good.", "The film was poor.", labels[-1], labels[0],
                f"the class of a review: '{labels[-1]}' (the last label) against '{labels[0]}' (the first); a "
                "sentiment classifier's positive and negative")


def put_example(pair: Pair) -> None:
    """Before the four text boxes: this model's example pair in any box not set yet, and in all four where they
    still hold the example put there for the model picked before (a pair typed or linked stays as it is)."""
    s, texts = st.session_state, (pair.clean, pair.corrupt, pair.answer, pair.wrong)
    before = s.get(_EXAMPLE)
    if before is not None and before != texts and tuple(s.get(k) for k in KEYS) == before:
        s.update(dict(zip(KEYS, texts)))
    for key, value in zip(KEYS, texts):
        s.setdefault(key, value)
    s[_EXAMPLE] = texts


def use_pair(pair: Pair) -> None:
    """Button callback: put a pair in the four text boxes."""
    st.session_state.update(dict(zip(KEYS, (pair.clean, pair.corrupt, pair.answer, pair.wrong))))


def budget(model, clean: str) -> work.Budget:
    """Sequences one request runs: 2 + every head (one row each), 2 + layers × tokens (residual)."""
    n = len(patching.token_ids(model, clean))
    heads, resid = patching.rows_needed(model, n)
    return work.Budget(heads + resid, limits.current().pruning_forward_passes, "sequences through the model",
                       "shorten the two texts")


def heads(model, model_key: str, args: tuple, budget: work.Budget | None = None) -> patching.Patched | None:
    """Each head's patching score (experiments.patching.patch_heads) for a model and a pair (clean, corrupt, answer,
    wrong), kept once per server under one key: the Patching view (its _run) and the pruning view's patching section
    read the same entry. Here (the section): within `budget`, on the page under a bar after its turn among the
    server's heavy requests; None when the budget refuses it."""
    return heavy.run("patch_heads", _keys(model_key, args)[0], "Patching each head…",
                     lambda p: patching.patch_heads(model, *args, progress=p), budget=budget, thread=False)


def _keys(model_key: str, args: tuple) -> tuple[tuple, tuple]:
    """The results store's keys: each head's scores (shared), and the Patching view's residual and gradients."""
    return ("patch-heads", model_key, *args), ("patching", model_key, *args)


def _run(progress, model, model_key: str, args: tuple) -> tuple:
    found = cache.kept(_keys(model_key, args)[0], lambda: patching.patch_heads(
        model, *args, progress=lambda f: progress(0.5 * f, "each head…")))

    def rest():
        resid = patching.patch_residual(model, *args, progress=lambda f: progress(0.5 + 0.5 * f, "each position…"))
        return resid, patching.gradient_scores(model, args[0], *args[2:])
    return (found, *cache.kept(_keys(model_key, args)[1], rest))


def results(model, model_key: str, args: tuple, rows: float):
    """(heads, residual: Patched; gradient importance [L, H]) once done; None while its job runs. A request of at
    most INLINE_ROWS sequences runs in the page itself (well under a second for `gpt`), a larger one as a job with
    a progress bar and Cancel."""
    (heads_found, found), (rest_found, rest) = (cache.peek(k) for k in _keys(model_key, args))
    if heads_found and rest_found:
        return (found, *rest)
    return heavy.run(JOB, _keys(model_key, args)[1], "Patching", _run, model, model_key, args,
                     light=rows <= INLINE_ROWS, keep=False)  # _run keeps its two parts


def head_name(rows: list[str], layer: int, head: int | None = None) -> str:
    """A row of patching scores and a head as every view names them: "L3 H2" ("L3" without a head) for a row
    "layer 3"; an encoder-decoder's rows ("decoder 1 cross") keep their name, then "H2"."""
    name = row_label(rows[layer])
    return name if head is None else f"{name} H{head}"


def inside_refusal(model_key: str, model) -> str | None:
    """What Inside a head would say instead of opening this model's heads, or None where it opens them: the built-ins
    it has a choice for open; any other model that is no text encoder or decoder does not; the rest as
    models.internals.inside_head_refusal says (from the config, no forward pass)."""
    if model_key in INSIDE:
        return None
    if model.family not in ("encoder", "decoder"):
        return "Inside a head recomputes one head of a text encoder or decoder."
    return inside_head_refusal(model)


def inside_note(why: str) -> str:
    """Inside a head's refusal (from inside_refusal) as a caption that says whose sentence it is."""
    return why if why.startswith("Inside a head") else f"Inside a head cannot open these heads: {why}"


def inside_button(where, why: str | None, label: str, **button) -> None:
    """A button to Inside a head, or where it cannot open the model's heads (`why`, from inside_refusal) one caption
    with its sentence instead, in `where` (st or a column)."""
    if why is None:
        where.button(label, icon="🧮", **button)
    else:
        where.caption(inside_note(why))


def open_inside(model_key: str, layer: int, head: int, text: str) -> None:
    """Button/click callback: Inside a head at this layer and head, on the clean text."""
    label, layer_key, head_key, text_key = INSIDE.get(model_key, (model_key, "ih_bert_layer", "ih_bert_head", None))
    params = {"ih_model": label, layer_key: f"L{layer}", head_key: f"H{head}"}
    if text_key:
        params[text_key] = text
    links.request("inside_head", params, sidebar=None if text_key else {"text": text})


def picked(model_key: str, text: str, scores) -> None:
    """on_select callback of both maps: the clicked head (or, for a layer × position cell, that layer's most
    restoring head) opens in Inside a head. Runs before the next run, so the sidebar's text can still be set."""
    import numpy as np

    clicks = st.session_state.get("_patch_clicks", 0)
    for chart, is_head in ((f"patch_heads_{clicks}", True), (f"patch_pos_{clicks}", False)):
        event = st.session_state.get(chart)
        points = event["selection"]["points"] if event else []
        if points:
            layer, col = (int(v) for v in points[0]["customdata"])
            st.session_state["_patch_clicks"] = clicks + 1
            open_inside(model_key, layer, col if is_head else int(np.nanargmax(scores[layer])), text)
            return
