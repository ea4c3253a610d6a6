"""Budgets refuse before anything runs; jobs report progress, stop on cancel, and wait their turn."""
import threading
import time

import limits
from ui import work


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
    job.thread.join(10)
    assert (job.state, job.result, job.fraction, seen) == ("done", 10, 1.0, [0, 1, 2, 3, 4])


def test_cancel_stops_the_job_at_its_next_step():
    started, steps = threading.Event(), []

    def forever(progress):
        started.set()
        for i in range(10_000):
            progress(i / 10_000)
            steps.append(i)
            time.sleep(0.001)

    job = _job(forever)
    started.wait(10)
    job.cancel = True
    job.thread.join(10)
    assert job.state == "cancelled" and len(steps) < 10_000


def test_a_value_error_is_the_jobs_sentence():
    def bad(progress):
        raise ValueError("Shorten the text.")

    job = _job(bad)
    job.thread.join(10)
    assert (job.state, job.error) == ("failed", "Shorten the text.")


def test_at_most_heavy_jobs_run_at_once_and_the_rest_wait(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")  # hosted: one at a time
    release, peak, lock = threading.Event(), [], threading.Lock()

    def hold(progress):
        with lock:
            peak.append(work.running())
        release.wait(10)

    jobs = [_job(hold) for _ in range(3)]
    time.sleep(0.5)
    assert sum(j.state == "running" for j in jobs) == 1
    assert sum(j.state == "waiting" for j in jobs) == 2 and "Waiting" in jobs[-1].text
    release.set()
    for j in jobs:
        j.thread.join(10)
    assert all(j.state == "done" for j in jobs) and max(peak) == 1


def test_offer_refuses_over_the_budget():
    from streamlit.testing.v1 import AppTest

    def page():
        from ui import work as w

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
                release.wait(10)

    first = threading.Thread(target=request, args=("a",))
    first.start()
    while work.running() == 0:
        time.sleep(0.01)
    rest = []
    for name in ("b", "c"):
        rest.append(threading.Thread(target=request, args=(name,)))
        rest[-1].start()
        while name not in heard:
            time.sleep(0.01)
    release.set()
    for t in [first, *rest]:
        t.join(10)
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
            release.wait(10)

    t = threading.Thread(target=sweep)
    t.start()
    inside.wait(10)
    other = _job(lambda progress: "done")
    time.sleep(3 * work.POLL_S)
    assert other.state == "waiting" and "1 request ahead" in other.text
    release.set()
    t.join(10)
    other.thread.join(10)
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
    t.join(5)
    assert done == [1] and work.running() == 0


def test_a_programming_error_is_logged_with_its_traceback_and_shown_as_one_sentence(caplog):
    def broken(progress):
        return {}["missing"]

    with caplog.at_level("ERROR", logger="ui.work"):
        job = _job(broken)
        job.thread.join(10)
    assert job.state == "failed" and job.error == "This request failed (KeyError); the server's log has the details."
    assert [r.exc_info[0] for r in caplog.records if r.name == "ui.work"] == [KeyError]


def test_a_small_models_precision_copy_does_not_wait_behind_a_heavy_request(monkeypatch):
    """Hosted, the one slot held by a long request: a copy of MiniLM (90 MB) in fp16 is made at once; the same for a
    model over SMALL_MODEL_BYTES would wait its turn."""
    from ui import precision as up

    monkeypatch.setenv(limits.ENV, "1")
    release, made = threading.Event(), {}

    def hold():
        with work.slot(1):
            release.wait(120)

    holder = threading.Thread(target=hold)
    holder.start()
    while work.running() == 0:
        time.sleep(0.01)
    try:
        for small in (True, False):
            if not small:
                monkeypatch.setattr(up, "SMALL_MODEL_BYTES", 1 << 20)
            key = "fp16" if small else "bf16"
            t = threading.Thread(target=lambda k=key: made.setdefault(k, up.variant("bert", "cpu", k)))
            t.start()
            if small:  # made while the slot is still held
                t.join(120)
                assert key in made
            else:      # in the line, not made
                while t.is_alive() and not work._queue:
                    time.sleep(0.01)
                assert work._queue and key not in made
            assert work.running() == 1 and holder.is_alive()
    finally:
        release.set()
        holder.join(120)
    t.join(60)
    assert "bf16" in made  # the waiting copy was made once the slot was free


def test_every_finished_job_gives_freed_memory_back(monkeypatch):
    released = []
    monkeypatch.setattr(work.memory, "release_freed", lambda: released.append(threading.get_ident()))

    def bad(progress):
        raise ValueError("Shorten the text.")

    for fn in (lambda progress: 1, bad):
        job = _job(fn)
        job.thread.join(10)
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
            helper.join()
        seen["before"], seen["after"] = before, _nice()

    t = threading.Thread(target=heavy)
    t.start()
    t.join()
    assert seen["inside"] == seen["helper"] == max(work.HEAVY_NICE, seen["before"])
    # lowering it back needs CAP_SYS_NICE: with it the thread is as before, without it it keeps the heavy value
    assert seen["after"] in (seen["before"], seen["inside"])
    assert _nice() == seen["before"]  # the asking thread's priority is a thread's, not the process's

    job = work.Job(lambda progress: _nice(), ())
    runner = threading.Thread(target=work._run, args=(job,))  # as start() runs a job
    runner.start()
    runner.join()
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
