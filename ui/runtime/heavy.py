"""Heavy work when a page asks for it: the one helper every view's heavy computation goes through.

`run` decides from the request itself (never from a clock) how a computation reaches the page, in this order:
1. a budget (ui.runtime.work.Budget) over its limit: its refusal sentence, and nothing runs; within it, its line;
2. a result kept under `key` in the results store: returned at once, nothing else drawn (but a button that stays);
3. a button (`Ask`), on every server or in hosted mode only: nothing runs until it is pressed for this key (a job's
   button stays while it runs and after: a press starts it anew);
4. where it runs: `light` work (a short text, one shard) at once on the page's thread under a bar; other work
   waits its turn among the server's heavy requests (work.slot, saying for how many), as a job with a bar and
   Cancel while the page stays live, or (`thread=False`, a loop the page simply waits for) on the page's thread
   under a bar;
5. the result kept under `key` (keep=False: the caller keeps its parts, or the result is this session's only).
While it waits, runs or was refused, `run` returns None and the page says which; a job that failed says why in one
sentence (work.follow). A job of other settings than the page's is forgotten. Does not: know any view, count the
work (the caller's Budget does), or keep more than one job per name in a session.

    budget = work.Budget(passes, limits.current().pruning_forward_passes, "forward passes", "use fewer pairs")
    res = heavy.run("circuits", key, "Finding the circuit:", find, model, pairs, budget=budget)  # find(progress, ...)
    if res is None:
        st.stop()
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

import limits
from limits.errors import UserError
from ui.runtime import cache, work


@dataclass(frozen=True)
class Ask:
    """The button that starts a heavy computation."""
    key: str                    # the button's widget key ("attr_full", "kv_go"): tests and share links press it
    label: str                  # "Generate with and without the cache"
    help: str | None = None
    caption: str = ""           # under the button, until it was pressed
    hosted_only: bool = False   # a laptop runs the work at once, without a button
    stays: bool = False         # drawn even once the result is kept (its press then finds the result)
    icon: str | None = None
    primary: bool = True        # the page's main action (st.button's type="primary")


def _asked(name: str) -> str:
    return f"_heavy_{name}_asked"


def _started(name: str) -> str:
    return f"_heavy_{name}_started"


def _press(name: str, key) -> None:
    """The button's callback: this key asked for, and started anew (a press after a cancel runs it again)."""
    st.session_state[_asked(name)] = key
    st.session_state.pop(_started(name), None)


def asked(name: str, key) -> bool:
    """Whether this session pressed `name`'s button for this key."""
    return st.session_state.get(_asked(name)) == key


def button(name: str, key, ask: Ask) -> None:
    """The one heavy button: pressing it asks for `key` (see run)."""
    st.button(ask.label, key=ask.key, type="primary" if ask.primary else "secondary", icon=ask.icon, help=ask.help,
              on_click=_press, args=(name, key))
    if ask.caption:
        st.caption(ask.caption)


def needs(ask: Ask | None) -> bool:
    """Whether this server shows the button (an Ask for hosted mode only: not on a laptop)."""
    return ask is not None and (limits.current().hosted or not ask.hosted_only)


def run(name: str, key, label: str, compute: Callable, *args, budget: work.Budget | None = None,
        ask: Ask | None = None, light: bool = False, thread: bool = True, keep: bool = True, weight: int = 1,
        draw: Callable[[work.Job], None] | None = None, place: bool = True, check: Callable[[], None] | None = None):
    """compute(progress, *args) for this request, as the module's docstring says; None until its result is there.

    name: the job's name in this session (work.job(name)) and the button's; key: what identifies the result (a
    tuple, arrays by digest); label: the bar's text, followed by what progress(fraction, text) says; weight: the
    server's heavy slots it takes (helper processes it starts); draw(job): partial results while a job runs;
    place=False: the caller draws the button itself later on the page (button(name, key, ask)), and run only says
    None until it was pressed; check(): called on the page just before a job starts (a cheap refusal, e.g. what
    would not fit in memory): its UserError is shown as one sentence and the job does not start."""
    if budget is not None and not work.offer(budget):
        return None
    if keep:
        found, value = cache.peek(key)
        if found:
            if ask is not None and ask.stays and place:
                button(name, key, ask)
            return value
    ask = ask if needs(ask) else None
    if not thread or light:  # on the page's thread: asked once, then computed in this run
        if ask is not None and not asked(name, key):
            if place:
                button(name, key, ask)
            return None
        return on_page(key, label, compute, args, queue=not light, keep=keep, weight=weight)
    if ask is not None and place:
        button(name, key, ask)
    if st.session_state.get(_started(name)) != key:
        work.forget(name)  # a job of other settings no longer matches the page
        if ask is not None and not asked(name, key):
            return None
        st.session_state[_started(name)] = key
        try:
            if check is not None:
                check()
        except UserError as err:
            st.error(str(err))
            return None
        fn = (lambda progress, *a: cache.kept(key, lambda: compute(progress, *a))) if keep else compute
        work.start(name, fn, *args)
    return work.follow(name, label, draw)


def on_page(key, label: str, compute: Callable, args: tuple = (), queue: bool = True, keep: bool = True,
            weight: int = 1):
    """compute(progress, *args) on the page's thread under a bar (work.on_page), kept under key when `keep`."""
    def go(progress):
        return cache.kept(key, lambda: compute(progress, *args)) if keep else compute(progress, *args)
    return work.on_page(label, go, queue, weight)
