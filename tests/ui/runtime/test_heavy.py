"""ui.runtime.heavy.run on a real Streamlit page: the budget refuses before anything runs, a kept result draws
nothing, a hosted-only button waits for its press (a laptop runs at once), a job starts once per key, shows its
result once done and is forgotten when the key changes; and no file outside ui/runtime runs heavy work its own way
(its own hosted button, its own job or queue)."""
import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import limits
from ui.runtime import cache

ROOT = Path(__file__).resolve().parents[3]
WAIT_S = 60.0  # the work below takes milliseconds: only a hang reaches it


def page(mode: str, n: int, limit: float, hosted_only: bool) -> None:
    """A page whose heavy work is the sum of the first n squares, counted in session state when on the page."""
    import streamlit as st

    from ui.runtime import heavy, work

    def squares(progress, n: int) -> int:
        total = 0
        for i in range(n):
            total += i * i
            progress((i + 1) / n, f"{i + 1} of {n}")
        if mode != "job":  # on the page's thread: it may count itself
            st.session_state["calls"] = st.session_state.get("calls", 0) + 1
        return total

    budget = work.Budget(n, limit, "squares", "choose a smaller n")
    ask = heavy.Ask("go", "Sum the squares", caption="Sums when asked.", hosted_only=hosted_only)
    res = heavy.run("squares", ("test-heavy", mode, n), "Summing…", squares, n, budget=budget, ask=ask,
                    light=mode == "light", thread=mode == "job")
    st.markdown("none" if res is None else f"sum {res}")


def _open(mode: str, n: int = 10, limit: float = 100, hosted_only: bool = False) -> AppTest:
    return AppTest.from_function(page, args=(mode, n, limit, hosted_only), default_timeout=WAIT_S)


@pytest.fixture(autouse=True)
def _clean():
    cache.STORES["results"].clear()
    yield
    cache.STORES["results"].clear()


def test_over_budget_the_refusal_and_nothing_runs():
    at = _open("page", n=1000, limit=100).run()
    assert not at.exception and at.markdown[0].value == "none"
    assert at.error[0].value.startswith("This asks for about 1,000 squares, over the 100")
    assert [b.key for b in at.button] == [] and "calls" not in at.session_state


def test_the_button_runs_once_and_the_kept_result_draws_nothing(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1")
    at = _open("page", hosted_only=True).run()
    assert not at.exception and at.markdown[0].value == "none" and "calls" not in at.session_state
    assert at.button(key="go").label == "Sum the squares" and at.caption[-1].value == "Sums when asked."
    at.button(key="go").click().run()
    assert not at.exception and at.markdown[0].value == f"sum {sum(i * i for i in range(10))}"
    assert at.session_state["calls"] == 1 and [b.key for b in at.button] == []
    again = _open("page", hosted_only=True).run()  # another session: the server's kept result, no button, no run
    assert again.markdown[0].value == "sum 285" and [b.key for b in again.button] == []
    assert "calls" not in again.session_state and again.caption[0].value.startswith("Work: 10 squares")


def test_a_hosted_only_button_is_not_shown_on_a_laptop(monkeypatch):
    monkeypatch.delenv(limits.ENV, raising=False)
    at = _open("light", hosted_only=True).run()
    assert not at.exception and at.markdown[0].value == "sum 285" and at.session_state["calls"] == 1
    assert [b.key for b in at.button] == []


def test_a_job_starts_on_its_press_and_is_forgotten_when_the_key_changes():
    at = _open("job", n=12).run()
    assert at.markdown[0].value == "none" and not at.session_state["_work_jobs"]  # nothing before the press
    at.button(key="go").click().run()
    job = at.session_state["_work_jobs"]["squares"]
    job.thread.join(WAIT_S)
    assert job.state == "done" and job.result == sum(i * i for i in range(12))
    at.run()
    assert not at.exception and at.markdown[0].value == "sum 506"
    assert cache.peek(("test-heavy", "job", 12)) == (True, 506)
    other = _open("job", n=13)
    other.session_state["_work_jobs"] = {"squares": job}  # the same session, other settings
    other.session_state["_heavy_squares_started"] = ("test-heavy", "job", 12)
    other.run()
    assert other.markdown[0].value == "none" and "squares" not in other.session_state["_work_jobs"]


def test_a_cancelled_job_says_so_and_its_button_starts_it_anew():
    n = 10 ** 8  # far more steps than the test waits for: only Cancel ends it
    at = _open("job", n=n, limit=n).run()
    at.button(key="go").click().run()
    first = at.session_state["_work_jobs"]["squares"]
    first.cancel = True
    first.thread.join(WAIT_S)
    assert first.state == "cancelled"
    at.run()
    assert not at.exception and at.markdown[0].value == "none" and at.info[0].value == "Cancelled."
    assert at.session_state["_work_jobs"]["squares"] is first  # not started again by a rerun
    at.button(key="go").click().run()
    again = at.session_state["_work_jobs"]["squares"]
    assert again is not first and not again.finished  # the press started it anew
    again.cancel = True
    again.thread.join(WAIT_S)
    assert again.state == "cancelled"


RUNTIME_ONLY = {("work", "start"), ("work", "follow"), ("work", "on_page")}  # jobs, bars
QUEUE = {"queued", "slot"}  # the server's line: a copy may wait in it, a button's work goes through heavy.run


def own_ways(path: Path) -> list[str]:
    """Where a file runs heavy work its own way: a job, a page bar, or a button beside the heavy queue or beside a
    test of hosted mode (its own hosted button)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [f"{node.lineno} {node.value.id}.{node.attr}" for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
             and (node.value.id, node.attr) in RUNTIME_ONLY]
    top = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))]  # a view's script
    for where, body in [(0, top), *((f.lineno, [f]) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef))]:
        names = {n.attr for s in body for n in ast.walk(s) if isinstance(n, ast.Attribute)}
        if "button" in names and (names & QUEUE or "hosted" in names):
            found.append(f"{where} a button beside {sorted(names & (QUEUE | {'hosted'}))}")
    return found


def test_no_file_outside_the_runtime_runs_heavy_work_its_own_way():
    """Views and their glue reach jobs, page bars and the heavy button only through ui.runtime.heavy.run."""
    found = []
    for path in [*(ROOT / "ui").rglob("*.py"), *(ROOT / "views").glob("*.py"), ROOT / "app.py"]:
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith("ui/runtime/"):
            found += [f"{rel}:{where}" for where in own_ways(path)]
    assert {f.split(":")[0] for f in found} == PENDING, found



def test_the_check_finds_a_hosted_button(tmp_path):
    """The check above can fail: the hosted button this change removed from ui/attribution.py is found."""
    old = tmp_path / "old.py"
    old.write_text("def text_results(args):\n"
                   "    if st.session_state.get('attr_asked') == args:\n"
                   "        return work.queued(lambda: one_text(*args))\n"
                   "    st.button('More', on_click=st.session_state.__setitem__, args=('attr_asked', args))\n"
                   "def flow():\n"
                   "    work.start('graph_flow', fn)\n")
    assert own_ways(old) == ["6 work.start", "1 a button beside ['queued']"]


# files whose heavy work still has its own idiom; each leaves this set when it goes through ui.runtime.heavy.run
PENDING: set[str] = set()
