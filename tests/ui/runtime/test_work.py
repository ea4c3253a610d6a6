"""Budgets refuse before anything runs; jobs report progress, stop on cancel, and wait their turn.

No test sleeps for a fixed time: each waits for the state it needs, through `_until` and `_joined`, and fails
saying what it waited for once WAIT_S passed (a regression fails one test, never hangs the suite)."""
import threading
import time

import pytest

import limits
from ui.runtime import work

WAIT_S = 60.0  # far above what any step here takes (milliseconds; a MiniLM copy: seconds): only a hang reaches it


def _until(condition, what: str, wait_s: float = WAIT_S) -> None:
    """Return once condition() holds; fail naming `what` after wait_s."""
    deadline = time.monotonic() + wait_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {wait_s:.0f} s for {what}")
        time.sleep(0.005)


def _joined(*threads: threading.Thread, wait_s: float = WAIT_S) -> None:
    """Join each thread; fail naming the ones still running after wait_s."""
    deadline = time.monotonic() + wait_s
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if alive := [t.name for t in threads if t.is_alive()]:
        pytest.fail(f"still running after {wait_s:.0f} s: {alive}")


def _set(event: threading.Event, what: str) -> None:
    if not event.wait(WAIT_S):
        pytest.fail(f"waited {WAIT_S:.0f} s for {what}")


def test_a_budget_is_one_sentence_and_decided_by_the_request():
    b = work.Budget(cost=120.0, limit=40.0, unit="GFLOP", fix="choose fewer layers")
    assert not b.fits
    assert b.refusal() == "This asks for about 120 GFLOP, over the 40 one request may use here: choose fewer layers."
    assert work.Budget(12.0, 40.0, "GFLOP").line() == "Work: 12 GFLOP of 40 allowed per request here."


def _job(fn, *args):
    job = work.Job(fn, args)
    job.thread = threading.Thread(target=work._run, args=(job,))
    job.thread.start()
    return job


def test_a_job_reports_progress_and_returns_its_result():
    seen = []

    def count(progress, n):
        for i in range(n):
            progress((i + 1) / n, f"step {i}")
            seen.append(i)
        return n * 2

    job = _job(count, 5)
    _joined(job.thread)
    assert (job.state, job.result, job.fraction, seen) == ("done", 10, 1.0, [0, 1, 2, 3, 4])


def test_cancel_stops_the_job_at_its_next_step():
    at_three, go_on, steps = threading.Event(), threading.Event(), []

    def long(progress):
        for i in range(10):
            progress(i / 10)
            steps.append(i)
            if i == 3:  # the person presses Cancel here
                at_three.set()
                go_on.wait(WAIT_S)

    job = _job(long)
    _set(at_three, "the job's fourth step")
    job.cancel = True
    go_on.set()
    _joined(job.thread)
    assert job.state == "cancelled" and steps == [0, 1, 2, 3]


def test_a_user_error_is_the_jobs_sentence_and_any_other_error_a_bug():
    from limits.errors import UserError

    def bad(progress):
        raise UserError("Shorten the text.")

    def bug(progress):
        raise ValueError("operands could not be broadcast together")

    job = _job(bad)
    _joined(job.thread)
    assert (job.state, job.error) == ("failed", "Shorten the text.")
    job = _job(bug)
    _joined(job.thread)
    assert job.state == "failed" and job.error.startswith("This request failed (ValueError)")


def test_at_most_heavy_jobs_run_at_once_and_the_rest_wait(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")  # hosted: one at a time
    release, peak, lock = threading.Event(), [], threading.Lock()

    def hold(progress):
        with lock:
            peak.append(work.running())
        release.wait(WAIT_S)

    jobs = [_job(hold) for _ in range(3)]
    _until(lambda: all(j.text.startswith("Waiting") for j in jobs if j.state == "waiting") and
           sum(j.state == "running" for j in jobs) == 1 and sum(j.state == "waiting" for j in jobs) == 2,
           "one job running and two told they wait")
    release.set()
    _joined(*(j.thread for j in jobs))
    assert all(j.state == "done" for j in jobs) and max(peak) == 1


def test_offer_refuses_over_the_budget():
    from streamlit.testing.v1 import AppTest

    def page():
        from ui.runtime import work as w

        if w.offer(w.Budget(50.0, 40.0, "GFLOP", "choose fewer tokens")):
            import streamlit as st

            st.button("Run", key="go")

    at = AppTest.from_function(page).run()
    assert at.error[0].value.endswith("choose fewer tokens.") and not at.button


def test_heavy_requests_wait_in_line_and_hear_how_many_are_ahead(monkeypatch):
    """Hosted (one heavy request at a time): the first holds the slot, the next two wait first come first served,
    told 1 and 2 requests ahead; they run in the order they came."""
    monkeypatch.setenv(limits.ENV, "1")
    release, order, heard = threading.Event(), [], {}

    def request(name):
        def note(n):
            heard.setdefault(name, set()).add(n)
        with work.slot(1, note):
            order.append(name)
            if name == "a":
                release.wait(WAIT_S)

    first = threading.Thread(target=request, args=("a",))
    first.start()
    _until(lambda: work.running() == 1, "the first request to take the slot")
    rest = []
    for name in ("b", "c"):
        rest.append(threading.Thread(target=request, args=(name,)))
        rest[-1].start()
        _until(lambda n=name: n in heard, f"request {name} to hear how many are ahead")
    release.set()
    _joined(first, *rest)
    assert order == ["a", "b", "c"] and 1 in heard["b"] and 2 in heard["c"]
    assert work.waiting_line(2) == "Waiting for 2 requests ahead of this one on this server…"
    assert work.running() == 0


def test_a_request_that_starts_helper_processes_weighs_them(monkeypatch):
    """Laptop (two heavy requests at once): a cost sweep weighs 1 + its helper processes, so it runs alone."""
    monkeypatch.setenv(limits.ENV, "0")
    assert limits.current().heavy_jobs == 2
    inside, release = threading.Event(), threading.Event()

    def sweep():
        with work.slot(3):
            inside.set()
            release.wait(WAIT_S)

    t = threading.Thread(target=sweep)
    t.start()
    _set(inside, "the sweep to take its slots")
    other = _job(lambda progress: "done")
    _until(lambda: "1 request ahead" in other.text, "the other job to say it waits behind the sweep")
    assert other.state == "waiting"
    release.set()
    _joined(t, other.thread)
    assert other.state == "done" and other.result == "done"


def test_heavy_work_inside_heavy_work_takes_no_second_slot(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")
    done = []

    def outer():
        with work.slot(1):
            with work.slot(1):  # e.g. a precision variant made inside the measurement
                done.append(work.running())

    t = threading.Thread(target=outer)
    t.start()
    _joined(t)
    assert done == [1] and work.running() == 0


def test_a_programming_error_is_logged_with_its_traceback_and_shown_as_one_sentence(caplog):
    def broken(progress):
        return {}["missing"]

    with caplog.at_level("ERROR", logger="ui.runtime.work"):
        job = _job(broken)
        _joined(job.thread)
    assert job.state == "failed" and job.error == "This request failed (KeyError); the server's log has the details."
    assert [r.exc_info[0] for r in caplog.records if r.name == "ui.runtime.work"] == [KeyError]


def test_a_small_models_precision_copy_does_not_wait_behind_a_heavy_request(monkeypatch):
    """Hosted, the one slot held by a long request: a copy of MiniLM (90 MB) in fp16 is made at once; the same for a
    model over SMALL_MODEL_BYTES would wait its turn."""
    from ui import precision as up

    monkeypatch.setenv(limits.ENV, "1")
    release, made = threading.Event(), {}

    def hold():
        with work.slot(1):
            release.wait(2 * WAIT_S)

    holder = threading.Thread(target=hold)
    holder.start()
    _until(lambda: work.running() == 1, "the long request to take the slot")
    try:
        for small in (True, False):
            if not small:
                monkeypatch.setattr(up, "SMALL_MODEL_BYTES", 1 << 20)
            key = "fp16" if small else "bf16"
            t = threading.Thread(target=lambda k=key: made.setdefault(k, up.variant("bert", "cpu", k)))
            t.start()
            if small:  # made while the slot is still held
                _joined(t)
                assert key in made
            else:      # in the line, not made
                _until(lambda t=t: work._queue or not t.is_alive(), "the large copy to wait in line")
                assert work._queue and key not in made
            assert work.running() == 1 and holder.is_alive()
    finally:
        release.set()
        _joined(holder)
    _joined(t)
    assert "bf16" in made  # the waiting copy was made once the slot was free


def test_every_finished_job_gives_freed_memory_back(monkeypatch):
    released = []
    monkeypatch.setattr(work.memory, "release_freed", lambda: released.append(threading.get_ident()))

    def bad(progress):
        raise ValueError("Shorten the text.")

    for fn in (lambda progress: 1, bad):
        job = _job(fn)
        _joined(job.thread)
        assert job.finished
    assert len(released) == 2  # after a result and after a failure, on the job's own thread


def _nice() -> int:
    import os

    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_heavy_work_runs_at_a_lower_priority_than_light_pages():
    seen = {}

    def heavy():  # on a thread of its own, as a page's script thread: it ends afterwards
        before = _nice()
        with work.slot():
            seen["inside"] = _nice()
            helper = threading.Thread(target=lambda: seen.setdefault("helper", _nice()))
            helper.start()  # a thread (or process) it starts meanwhile inherits the value
            helper.join(WAIT_S)
        seen["before"], seen["after"] = before, _nice()

    t = threading.Thread(target=heavy)
    t.start()
    _joined(t)
    assert seen["inside"] == seen["helper"] == max(work.HEAVY_NICE, seen["before"])
    # lowering it back needs CAP_SYS_NICE: with it the thread is as before, without it it keeps the heavy value
    assert seen["after"] in (seen["before"], seen["inside"])
    assert _nice() == seen["before"]  # the asking thread's priority is a thread's, not the process's

    job = work.Job(lambda progress: _nice(), ())
    runner = threading.Thread(target=work._run, args=(job,))  # as start() runs a job
    runner.start()
    _joined(runner)
    assert job.result == max(work.HEAVY_NICE, seen["before"])


def test_heavy_work_on_the_page_gives_freed_memory_back_once_it_ends(monkeypatch):
    released = []
    monkeypatch.setattr(work.memory, "release_freed", lambda: released.append(1))
    with work.slot():
        with work.slot():  # nested heavy work: no second slot, no second release
            pass
        assert released == []
    assert released == [1]
    try:
        with work.slot():
            raise ValueError("Shorten the text.")
    except ValueError:
        pass
    assert released == [1, 1]


def _two_pages():
    """A job's page (Circuit) and another (Heads). With `pick_heads` set, Circuit's run asks for Heads as the server
    does with the person's click (a whole-app rerun request that waits for the run to yield), and the job ends in
    that same moment: work._rerun_on, what the job's fragment calls then, decides whether Circuit runs again. Nothing
    between the two reads st.session_state, a yield point where the waiting request would stop the run first. With
    `job_ended` alone, the job ends with no other request waiting."""
    import streamlit as st
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    from ui.runtime import streamlit_private, work

    def circuit():
        st.session_state["circuit_runs"] = st.session_state.get("circuit_runs", 0) + 1
        st.title("Circuit")
        if st.session_state.pop("pick_heads", False):
            seen = st.session_state.setdefault("seen", {})
            ctx, page = get_script_run_ctx(), streamlit_private.page()
            heads = next(h for h, p in ctx.pages_manager.get_pages().items() if p["url_pathname"] == "heads")
            ctx.script_requests.request_rerun(RerunData(page_script_hash=heads))
            seen["next page"] = "heads" if streamlit_private.next_page() == heads else streamlit_private.next_page()
            work._rerun_on(page)
        if st.session_state.pop("job_ended", False):
            work._rerun_on(streamlit_private.page())

    def heads():
        st.title("Heads")

    st.navigation([st.Page(circuit, default=True), st.Page(heads)]).run()


def test_a_job_that_ends_as_the_person_picks_another_page_leaves_them_there():
    """The race a browser saw: Enter on Heads while the lesson's circuit job ended, and the rerun that shows the
    job's result took the page back to Induction. Without the check in _rerun_on, this ends on Circuit."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_two_pages).run()
    assert not at.exception and at.title[0].value == "Circuit"
    at.session_state["job_ended"] = True  # no other request: the page runs again to show the result
    at.run()
    assert at.title[0].value == "Circuit" and at.session_state["circuit_runs"] == 3
    at.session_state["pick_heads"] = True
    at.run()
    assert not at.exception and at.session_state["seen"] == {"next page": "heads"}
    assert at.title[0].value == "Heads" and at.session_state["circuit_runs"] == 4
