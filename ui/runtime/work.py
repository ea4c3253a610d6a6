"""Long requests: a work budget decided before they start, and a run off the script thread with progress and cancel.

A budget is the work a request asks for, counted from the request itself (FLOPs, forward passes, max-flow
problems, lines to draw), never from a clock, against what one request may spend (`limits.current()`).
`offer` shows it under the button and refuses, with one sentence, what is over it, before anything runs.

A job runs `fn(progress, *args)` on its own thread so the page stays live: `progress(fraction, text)` moves the
bar and raises `Cancelled` once the person pressed Cancel, so `fn` stops at its next step. Jobs belong to one
session (st.session_state); at most `limits.current().heavy_jobs` run at once in a server process, the
others wait their turn, first come first served, and say for how many requests. Heavy work that runs on the
script thread (a pruning curve, a corpus run, precision's measurement, the cost sweeps) waits in the same
line through `slot` / `queued` (on_page, ui.runtime.heavy and ui.runtime.cache.kept(heavy=True) use them).
While a request holds its slot its thread runs at nice HEAVY_NICE, so the light pages of other sessions get the
cores first.
`fn` must not call Streamlit (it has no page); take the models it needs in the script first and pass them in.

    budget = Budget(cost=flops / 1e9, limit=limits.current().request_gflop, unit="GFLOP",
                    fix="choose fewer layers or tokens")
    if offer(budget):                                     # the line, or the refusal: then nothing runs
        start("kv_generate", generate_all, net, n)        # fn(progress, net, n) -> result
    result = follow("kv_generate", "Generating…")         # bar + Cancel while it runs; the result once done

A job is for work a person may want to stop (KV generation, exact flow, patching, attribution rows); a loop the
page simply waits for (the pruning view's scores and curve, the cost sweeps) runs on the script thread through
`on_page` instead: the same bar, its turn through `queued`, no Cancel. Views reach both through ui.runtime.heavy.run,
which also decides, from the request, between them and a button.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import streamlit as st

import limits
from limits import memory
from limits.errors import UserError
from ui.runtime import streamlit_private

POLL_S = 0.5  # how often a running job's bar is redrawn
HEAVY_NICE = 10  # a heavy request's thread runs at this nice value: light pages of other sessions go first
_log = logging.getLogger(__name__)


class Cancelled(Exception):
    """Raised by progress() inside a job once its Cancel button was pressed."""


@dataclass(frozen=True)
class Budget:
    cost: float       # the work this request asks for, in unit
    limit: float      # what one request may spend here
    unit: str         # "GFLOP", "forward passes", "max-flow problems", "lines"
    fix: str = ""     # what the person can change, e.g. "choose fewer layers or tokens"

    @property
    def fits(self) -> bool:
        return self.cost <= self.limit

    def line(self) -> str:
        """'Work: 12 GFLOP of 40 allowed here.'"""
        return f"Work: {_num(self.cost)} {self.unit} of {_num(self.limit)} allowed per request here."

    def refusal(self) -> str:
        """One sentence for a request over its budget."""
        return (f"This asks for about {_num(self.cost)} {self.unit}, over the {_num(self.limit)} one request may "
                f"use here{': ' + self.fix if self.fix else ''}.")


def _num(x: float) -> str:
    """1234567 -> '1,234,567'; 0.25 -> '0.25'"""
    return f"{x:,.0f}" if x >= 10 or x == int(x) else f"{x:.2g}"


def offer(budget: Budget) -> bool:
    """Show the budget; over it, show the refusal sentence instead and return False."""
    if budget.fits:
        st.caption(budget.line())
        return True
    st.error(budget.refusal())
    return False


@dataclass
class Job:
    fn: Callable
    args: tuple
    fraction: float = 0.0
    text: str = ""
    state: str = "waiting"          # waiting, running, done, failed, cancelled
    result: object = None
    error: str = ""
    cancel: bool = False
    thread: threading.Thread | None = None

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled")

    def progress(self, fraction: float, text: str = "") -> None:
        if self.cancel:
            raise Cancelled
        self.fraction, self.text = min(max(float(fraction), 0.0), 1.0), text or self.text


_SLOTS = threading.Condition()
_running = 0        # slots of heavy_jobs taken now (a request may take more than one: see slot's weight)
_holders = 0        # heavy requests running now
_queue: list = []   # tickets of the heavy requests waiting, first come first served
_HELD = threading.local()  # .slot: this thread holds a slot (nested heavy work runs inside it, never waits on itself)


def running() -> int:
    """Heavy requests (jobs and queued script work) running now in this process."""
    return _holders


def waiting_line(n: int) -> str:
    """2 -> 'Waiting for 2 requests ahead of this one on this server…'"""
    return f"Waiting for {n} request{'s' if n != 1 else ''} ahead of this one on this server…"


@contextmanager
def slot(weight: int = 1, note: Callable[[int], None] | None = None, cancelled: Callable[[], bool] = lambda: False):
    """Hold `weight` of the server's limits.current().heavy_jobs slots while the block runs (a request that starts
    helper processes weighs them too), after waiting in line, first come first served. While it waits, note(n)
    hears every POLL_S how many heavy requests are ahead of it; cancelled() true raises Cancelled. Inside a slot
    the same thread takes no second one. When the block ends, the heap pages it freed go back to the system."""
    global _running, _holders
    if getattr(_HELD, "slot", False):  # this thread holds one already (a variant made inside a measurement)
        yield
        return
    ticket = object()
    with _SLOTS:
        _queue.append(ticket)
    try:
        while True:
            with _SLOTS:
                need = max(1, min(weight, limits.current().heavy_jobs))
                if _queue[0] is ticket and _running + need <= limits.current().heavy_jobs:
                    _running, _holders = _running + need, _holders + 1
                    break
                ahead = _holders + _queue.index(ticket)
            if cancelled():
                raise Cancelled
            if note is not None:
                note(ahead)  # it may draw on a page that went away: the finally gives the place up
            with _SLOTS:
                _SLOTS.wait(timeout=POLL_S)
    finally:
        with _SLOTS:
            _queue.remove(ticket)
            _SLOTS.notify_all()
    _HELD.slot = True
    before = _set_nice(HEAVY_NICE)
    try:
        yield
    finally:
        _HELD.slot = False
        _set_nice(before)
        with _SLOTS:
            _running, _holders = _running - need, _holders - 1
            _SLOTS.notify_all()
        memory.release_freed()  # what the request freed goes back to the system, not to an idle arena


def _set_nice(value: int | None) -> int | None:
    """Set this thread's nice value (Linux: per thread); -> the value before, or None where it cannot. Raising it
    is always allowed; lowering it back needs CAP_SYS_NICE, and without it the thread keeps the higher value until
    it ends: a job's thread ends with the job, a page's script thread with the page run. In hosted mode a request's
    torch work runs on its own thread (limits.one_thread_per_request), so the value covers all of it, and helper
    processes started meanwhile inherit it."""
    if value is None:
        return None
    tid = threading.get_native_id()
    try:
        before = os.getpriority(os.PRIO_PROCESS, tid)
        if before != value:
            os.setpriority(os.PRIO_PROCESS, tid, value)
        return before
    except (AttributeError, OSError):  # no per-thread priority here, or not allowed to lower it again
        return None


def queued(fn: Callable[[], object], weight: int = 1, note: Callable[[int], None] | None = None):
    """fn() on the script thread once this request's turn among the server's heavy requests came (slot); while it
    waits, note(n) or else a caption on the page says for how many requests ahead of it."""
    holder = st.empty() if note is None else None

    def say(n: int) -> None:
        if note is not None:
            note(n)
        else:
            holder.caption(f"⏳ {waiting_line(n)}")

    try:
        with slot(weight, say):
            if holder is not None:
                holder.empty()
            return fn()
    finally:
        if holder is not None:
            holder.empty()


def on_page(label: str, fn: Callable[[Callable], object], queue: bool = True, weight: int = 1):
    """fn(progress) on the script thread under a bar labelled `label`; progress(fraction, text="") moves it and
    shows `label text`. queue: fn waits its turn among the server's heavy requests first (`weight` slots), the bar
    saying for how many; else it runs at once (a light request). The bar goes when fn ends, a refusal too."""
    bar = st.progress(0.0, text=label)

    def progress(fraction: float, text: str = "") -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=f"{label} {text}".strip())

    try:
        if not queue:
            return fn(progress)
        return queued(lambda: fn(progress), weight, lambda n: bar.progress(0.0, text=waiting_line(n)))
    finally:
        bar.empty()


def _run(job: Job) -> None:
    try:
        with slot(1, lambda n: setattr(job, "text", waiting_line(n)), lambda: job.cancel):
            job.text = ""
            job.state = "running"
            job.result = job.fn(job.progress, *job.args)
            job.fraction, job.state = 1.0, "done"
    except Cancelled:
        job.state = "cancelled"
    except UserError as err:  # what the input cannot do: its own sentence
        job.state, job.error = "failed", str(err)
    except Exception as err:  # noqa: BLE001 - a job's thread has nobody to raise to: a programming error
        _log.exception("job %s failed", getattr(job.fn, "__qualname__", job.fn))  # logged with its traceback
        job.state, job.error = "failed", (f"This request failed ({type(err).__name__}); the server's log has the "
                                          "details.")


def _jobs() -> dict:
    return st.session_state.setdefault("_work_jobs", {})


def start(key: str, fn: Callable, *args) -> Job:
    """Run fn(progress, *args) on a thread as this session's job `key` (a running one is cancelled first)."""
    old = _jobs().get(key)
    if old is not None and not old.finished:
        old.cancel = True
    job = Job(fn, args)
    job.thread = threading.Thread(target=_run, args=(job,), name=f"job-{key}", daemon=True)
    _jobs()[key] = job
    job.thread.start()
    return job


def job(key: str) -> Job | None:
    return _jobs().get(key)


def forget(key: str) -> None:
    """Drop job `key` (cancelling it if it still runs), e.g. when its inputs changed."""
    old = _jobs().pop(key, None)
    if old is not None:
        old.cancel = True


def follow(key: str, label: str, draw: Callable[[Job], None] | None = None):
    """The result of job `key` once it is done (None before, or when there is none). While it runs: a progress
    bar, a Cancel button and draw(job) (e.g. partial results), redrawn every POLL_S by a fragment; when it ends
    the whole page runs again to show the result, unless the person is on their way to another page by then (they
    see it when they come back). A failure is shown as one sentence (st.error)."""
    current = job(key)
    if current is None:
        return None
    if not current.finished:
        _watch(key, label, draw, streamlit_private.page())
        return None
    if current.state == "failed":
        st.error(current.error)
    elif current.state == "cancelled":
        st.info("Cancelled.")
    return current.result if current.state == "done" else None


@st.fragment(run_every=POLL_S)
def _watch(key: str, label: str, draw, page: str | None) -> None:
    """The bar of job `key`, drawn on `page` (the page that follows it) every POLL_S until the job ends."""
    current = job(key)
    if current is None:
        return
    if current.finished:
        _rerun_on(page)
        return
    c1, c2 = st.columns([5, 1])
    c1.progress(current.fraction, text=f"{label} {current.text}".strip())
    if c2.button("Cancel", key=f"{key}_cancel"):
        current.cancel = True
    if draw is not None:
        draw(current)


def _rerun_on(page: str | None) -> None:
    """Run `page` again (to show a job's result) if it is still the page this session runs next. The person may
    have picked another page while this fragment ran: that request waits for this run, and a rerun asked for now
    would replace it with `page` (the later request's page wins), taking them back."""
    if streamlit_private.next_page() == page:
        st.rerun()
