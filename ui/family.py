"""What the sidebar's model is, and what its family adds to a view.

A decoder can write tokens after the prompt (how many: a number the view asks for, capped by
limits.current().new_tokens); an encoder-decoder has three attentions (cross, encoder, decoder: a
selector); a grouped-query decoder has query heads that share key/value heads (a caption names them).
When a view cannot show the model, `switch()` says why in one sentence and offers a button per model
that works, which sets the sidebar's model. A built-in trained for one task (the date models, the digit sorter)
gets one line on what it was trained on, and, when the text is not of that kind, a button that puts in an example
and one that switches to BERT (`task_note`). Every widget here is bound to the URL and kept across pages.
Nothing here draws figures or runs a model outside ui.runtime.cache.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import streamlit as st

import limits
from analysis.trace import AttentionTrace
from data import dates, induction, sorting
from limits.errors import UserError
from models import available
from ui.runtime import cache
from ui.state import BIND, MODEL_LABELS, Selection, selection  # noqa: F401 (BIND: views import it here)
from ui.trace_text import trace_or_error

PART_LABELS = {"cross": "Cross-attention: decoder tokens over encoder tokens",
               "encoder": "Encoder self-attention", "decoder": "Decoder masked self-attention"}


def family(model) -> str:
    """'encoder', 'decoder', 'encoder-decoder', 'vision' (Hugging Face models), 'tiny', 'toy' or 'rnn': what the
    model says it is (models.contract.AttentionModel), never guessed from its class name."""
    return model.family


def _set_model(name: str) -> None:
    st.session_state["model"] = name


def switch(why: str, targets: list[str], key: str) -> None:
    """One sentence on why this view cannot show the model, and a button for each target that is available."""
    st.info(why)
    _buttons(targets, f"{key}_to")


def _buttons(targets: list[str], key: str, example: dict[str, str] | None = None) -> None:
    """A "Switch to" button for each target that is available, side by side (keys f"{key}_{name}"); with an
    example ({text box's key: text}), first a button that puts those texts in (key f"{key}_example")."""
    offered = [t for t in targets if t in available()]
    cols = st.columns(max(1, len(offered) + bool(example)))
    if example:
        shown = " / ".join(f"“{t}”" for t in example.values())
        cols[0].button(f"Use {shown}", key=f"{key}_example", on_click=st.session_state.update, args=(example,),
                       icon="✏️")
    for col, name in zip(cols[bool(example):], offered):
        col.button(f"Switch to {MODEL_LABELS.get(name, name)}", key=f"{key}_{name}", on_click=_set_model,
                   args=(name,), icon="🔀")


def _is_date(text: str) -> bool:
    return dates.fields(text) is not None  # one of the formats the date models learned


def _is_digits(text: str) -> bool:
    try:
        sorting.encode(text)
    except UserError:
        return False
    return True


def _is_syllables(text: str) -> bool:
    try:
        induction.encode(text)
    except UserError:
        return False
    return True


class Task(NamedTuple):
    what: str                      # what the model was trained on, as a clause after "trained only on"
    examples: tuple[str, str]      # a text of that kind, and a second one for a minimal pair
    fits: Callable[[str], bool]    # is a text of that kind?


_DATES = Task("written dates, which it rewrites as ISO dates (23 November 2026 → 2026-11-23)",
              ("23 November 2026", "23 December 2026"), _is_date)
TASKS = {"seq2seq-transformer": _DATES, "seq2seq-bahdanau": _DATES, "seq2seq-luong": _DATES,
         "tiny": Task("strings of up to 10 digits, which it sorts (31415 → 11345)", ("31415", "31425"), _is_digits),
         "induction": Task("random syllables in which a stretch comes back (ba ke mi … ba ke mi)",
                           (induction.twice(12), induction.twice(12, seed=3)), _is_syllables)}


def task_note(model: str, boxes: dict[str, str], key: str) -> None:
    """For a built-in trained on one task: one line saying what on. When a text box holds something else
    (boxes: the box's session key -> its text now), also a button that puts examples of the task in the boxes
    and one that switches to BERT."""
    task = TASKS.get(model)
    if task is None:
        return
    label = MODEL_LABELS.get(model, model)
    if all(task.fits(t) for t in boxes.values()):
        st.caption(f"{label}: trained only on {task.what}.")
        return
    st.info(f"{label} was trained only on {task.what}. This text is not one, so its attention here shows nothing "
            "the model learned: try an example of its task, or a model trained on English.")
    _buttons(["bert"], f"{key}_task", dict(zip(boxes, task.examples)))


def loaded(sel: Selection):
    """The sidebar's model, or None after showing why it could not be loaded."""
    try:
        return cache.model(sel.model, sel.device, sel.dtype)
    except UserError as err:
        st.error(str(err))
        return None


def _offer_builtins(current: str, key: str) -> None:
    """After an error: a button for each built-in text model this view shows, other than the current one."""
    _buttons([t for t in ("bert", "gpt") if t != current], f"{key}_err_to")


def head_sources(sel: Selection) -> list[str]:
    """What the inside-a-head view offers: the toy, the tiny decoder, BERT, the built-in GPT when present, and the
    sidebar's model when it is a Hugging Face encoder or decoder or the induction model (otherwise a caption says
    why it is not)."""
    sidebar = loaded(sel) if sel.model not in ("toy", "tiny", "bert") else None
    kind = family(sidebar) if sidebar is not None else None
    if kind == "induction":  # the sidebar's attention-only model: its heads are ours, offered by name
        return ["toy", "tiny", "bert", *(["gpt"] if "gpt" in available() else []), "induction"]
    if sidebar is not None and kind not in ("encoder", "decoder"):
        article = "an" if kind[0] in "aeiou" else "a"  # an encoder-decoder
        st.caption(f"The sidebar's model, {sidebar.label}, is {article} {kind} model: this view looks inside the "
                   "heads of text encoders (BERT-like) and decoders (Llama-style, GPT-2), so it shows one of the "
                   "models below.")
    own = [sel.model] if kind in ("encoder", "decoder") and sel.model not in ("bert", "gpt") else []
    return ["toy", "tiny", "bert", *(["gpt"] if "gpt" in available() else []), *own]


def sharing(model) -> str | None:
    """'Grouped-query attention: H0 H1 read key/value head 0; H2 H3 read 1.' for a GQA/MQA decoder, else None."""
    kv_of = model.kv_head_of
    if not kv_of or len(set(kv_of)) == len(kv_of):
        return None
    groups = {}
    for h, g in enumerate(kv_of):
        groups.setdefault(g, []).append(f"H{h}")
    kind = "Multi-query" if len(groups) == 1 else "Grouped-query"
    return f"{kind} attention: " + "; ".join(f"{' '.join(hs)} read key/value head {g}" for g, hs in groups.items()) \
        + ". Heads that share one see the same keys; only their queries differ."


def windows(model, n_tokens: int) -> str:
    """', sliding window of 3 tokens in every layer' (or 'in L0, L2') where a decoder's layers see fewer than the
    text's n_tokens, for the words after 'causal attention'; '' otherwise."""
    found = [(l, w) for l, w in enumerate(model.windows) if w is not None and w < n_tokens]
    if not found:
        return ""
    sizes = sorted({w for _, w in found})
    where = "every layer" if len(found) == len(model.windows) else ", ".join(f"L{l}" for l, _ in found)
    return f", sliding window of {' or '.join(map(str, sizes))} tokens (the query's own included) in {where}"


def new_tokens(prefix: str, model) -> int:
    """For a Hugging Face decoder with a language-model head: how many tokens to write after the prompt."""
    if family(model) != "decoder" or model.predicts != "next token":
        return 0
    cap = limits.current().new_tokens
    return int(st.number_input("Tokens to write after the prompt (greedy)", 0, min(cap, 256), 0, key=f"{prefix}_new",
                               help="Their rows show the attention that chose each next token.", **BIND))


def pick_part(prefix: str, trace: AttentionTrace) -> str:
    """Which attention to show: the trace's own kind, or for an encoder-decoder the one chosen of its three."""
    if not trace.parts:
        return trace.kind
    return st.radio("Attention", list(trace.stacks()), key=f"{prefix}_part", horizontal=True,
                    format_func=lambda k: PART_LABELS.get(k, k), **BIND) or trace.kind


class Shown(NamedTuple):
    trace: AttentionTrace   # the attention to draw (for an encoder-decoder, the stack chosen)
    new_tokens: int         # tokens a decoder wrote after the prompt (0 otherwise)
    part: str               # which stack: the trace's kind, or "encoder" / "decoder"
    model: object           # the loaded model


def text_trace(prefix: str, sel: Selection | None = None) -> Shown | None:
    """The sidebar text's attention with this family's controls (tokens to write, which attention), or None
    after telling the user what to do (switch buttons when the model reads images)."""
    sel = sel or selection()
    model = loaded(sel)
    if model is None:
        _offer_builtins(sel.model, prefix)
        return None
    if family(model) == "vision":
        switch("This model reads images, not text: the Vision view shows it; here, pick a text model.",
               ["bert", "gpt", "seq2seq-transformer"], prefix)
        st.page_link("views/vision.py", label="Open the Vision view", icon="🖼️")
        return None
    if not sel.text.strip():
        st.info("Type a sentence in the sidebar to see its attention.")
        return None
    task_note(sel.model, {"text": sel.text}, prefix)
    n = new_tokens(prefix, model)
    tr = trace_or_error(sel, sel.text, sel.text_b, n)
    if tr is None:
        _offer_builtins(sel.model, prefix)
        return None
    for note in tuple(model.notices) + tr.notices:
        st.warning(note)
    if tr.output and family(model) in ("decoder", "encoder-decoder"):
        st.text(f"It wrote: {tr.output[:500]}")  # plain text: what a model writes is never markdown
    gqa = sharing(model)
    if gqa:
        st.caption(gqa)
    part = pick_part(prefix, tr)
    return Shown(tr.stacks()[part], n, part, model)


def causal(model) -> bool:
    """Whether the model's self-attention sees only the past (a decoder, the tiny sorter, the induction model, a causal
    toy): its first token can attend only to itself."""
    return family(model) in ("decoder", "tiny", "induction") or (family(model) == "toy" and model.settings.causal)
