"""One AppTest helper for the view tests: the app opened with session state set, then switched to one view."""
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
