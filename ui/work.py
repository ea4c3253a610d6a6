"""Long requests: a work budget decided before they start, and a run off the script thread with progress and cancel.

A budget is the work a request asks for, counted from the request itself (FLOPs, forward passes, max-flow
problems, lines to draw), never from a clock, against what one request may spend (`limits.current()`).
`offer` shows it under the button and refuses, with one sentence, what is over it, before anything runs.

A job runs `fn(progress, *args)` on its own thread so the page stays live: `progress(fraction, text)` moves the
bar and raises `Cancelled` once the person pressed Cancel, so `fn` stops at its next step. Jobs belong to one
session (st.session_state); at most `limits.current().heavy_jobs` run at once in a server process, the
others wait their turn and say so. `fn` must not call Streamlit (it has no page); take the models it needs in
the script first and pass them in.

    budget = Budget(cost=flops / 1e9, limit=limits.current().request_gflop, unit="GFLOP",
                    fix="choose fewer layers or tokens")
    if offer(budget) and st.button("Run", key="kv_go"):
        start("kv_generate", generate_all, net, n)        # fn(progress, net, n) -> result
    result = follow("kv_generate", "Generating…")         # bar + Cancel while it runs; the result once done

For the pruning view (or any view with a long loop): put the loop's body behind `progress(done / total)`
inside fn, count its forward passes for the Budget before starting, and show the result from follow().
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st

import limits

POLL_S = 0.5  # how often a running job's bar is redrawn


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
    started: float = field(default_factory=time.monotonic)
    thread: threading.Thread | None = None

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled")

    def progress(self, fraction: float, text: str = "") -> None:
        if self.cancel:
            raise Cancelled
        self.fraction, self.text = min(max(float(fraction), 0.0), 1.0), text or self.text


_SLOTS = threading.Condition()
_running = 0


def running() -> int:
    """Jobs running now in this process."""
    return _running


def _run(job: Job) -> None:
    global _running
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 5)  # light pages of others go first
    except (AttributeError, OSError):
        pass
    with _SLOTS:
        while _running >= limits.current().heavy_jobs and not job.cancel:
            job.text = "Waiting for other long requests on this server to finish…"
            _SLOTS.wait(timeout=POLL_S)
        _running += 1
    try:
        if job.cancel:
            raise Cancelled
        job.state = "running"
        job.result = job.fn(job.progress, *job.args)
        job.fraction, job.state = 1.0, "done"
    except Cancelled:
        job.state = "cancelled"
    except ValueError as err:
        job.state, job.error = "failed", str(err)
    except Exception as err:  # noqa: BLE001 - shown as one sentence, the session goes on
        job.state, job.error = "failed", f"This request failed ({type(err).__name__}: {err})."
    finally:
        with _SLOTS:
            _running -= 1
            _SLOTS.notify_all()


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
    the whole page runs again to show the result. A failure is shown as one sentence (st.error)."""
    current = job(key)
    if current is None:
        return None
    if not current.finished:
        _watch(key, label, draw)
        return None
    if current.state == "failed":
        st.error(current.error)
    elif current.state == "cancelled":
        st.info("Cancelled.")
    return current.result if current.state == "done" else None


@st.fragment(run_every=POLL_S)
def _watch(key: str, label: str, draw) -> None:
    current = job(key)
    if current is None:
        return
    if current.finished:
        st.rerun()
    c1, c2 = st.columns([5, 1])
    c1.progress(current.fraction, text=f"{label} {current.text}".strip())
    if c2.button("Cancel", key=f"{key}_cancel"):
        current.cancel = True
    if draw is not None:
        draw(current)


def wait(key: str, timeout_s: float = 600.0) -> Job | None:
    """Block until job `key` ends (for tests and scripts; a page uses follow)."""
    current = job(key)
    if current is not None and current.thread is not None:
        current.thread.join(timeout_s)
    return current
