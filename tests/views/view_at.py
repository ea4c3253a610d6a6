"""One AppTest helper for the view tests: the app opened with session state set, then switched to one view."""
from collections.abc import Iterator
from pathlib import Path

from streamlit.testing.v1 import AppTest


def open_view(page: str, timeout: float = 300, **state) -> AppTest:
    """The app run once with `state` in st.session_state, then views/<page>.py run; asserts no exception."""
    at = AppTest.from_file("../../app.py", default_timeout=timeout)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, at.exception
    return at


def open_linked(page: str, timeout: float = 300, state: dict | None = None, **params) -> AppTest:
    """The app opened from a link with `params` as its query parameters (and `state` in st.session_state, such as
    a folder's model: {"model": "hf:", "hf_spec": folder}), then views/<page>.py run."""
    at = AppTest.from_file("../../app.py", default_timeout=timeout)
    for k, v in params.items():
        at.query_params[k] = v
    for k, v in (state or {}).items():
        at.session_state[k] = v
    at.run()
    return at.switch_page(f"views/{page}.py").run()


def finished(at: AppTest, job: str, timeout: float = 300) -> AppTest:
    """The view's job `job` (ui.runtime.work), if one was started, waited for; then the view run again to show its
    result."""
    jobs = at.session_state["_work_jobs"] if "_work_jobs" in at.session_state else {}
    if job in jobs:
        jobs[job].thread.join(timeout)
    return at.run()


def every_view(folder: str, monkeypatch) -> Iterator[tuple[str, AppTest]]:
    """The app with the hf: folder in the sidebar, every view opened in turn in one session (menu order): yields
    (the view's file stem, the AppTest) once it raised nothing and showed no error. The Seq2seq view's built-in
    writer stops after 8 tokens (random weights rarely write their end token)."""
    from bench.browser import views
    from models.hf import encdec

    monkeypatch.setattr(encdec, "MAX_NEW", 8)
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["text"] = "The cat sat on the mat."
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = folder
    at.run()
    for view, _, _ in views():
        at.switch_page(view).run()
        stem = Path(view).stem
        assert not at.exception, f"{stem}: {at.exception[0].message[:300]}"
        assert not at.error, f"{stem}: {[e.value for e in at.error]}"
        yield stem, at
