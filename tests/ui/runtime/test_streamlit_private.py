"""One test per behaviour of Streamlit's private parts that ui/runtime/streamlit_private.py relies on: an upgrade that
changes one fails the test named after it."""
import re

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from ui.runtime import preload, streamlit_private


def test_pages_manager_holds_the_asked_page_and_set_script_intent_clears_it():
    manager = PagesManager("app.py")
    manager.set_script_intent("", "nosuchview")
    assert manager.intended_page_name == "nosuchview"
    manager.set_script_intent("", "")
    assert not manager.intended_page_name


def _navigate():
    import streamlit as st

    def home():
        st.write("home")

    page = st.Page(home, title="Home", default=True)
    ran = st.navigation([page], position="hidden")
    st.session_state["same_object"] = ran is page
    st.session_state["marked"] = page._can_be_called


def test_navigation_marks_the_page_object_it_is_given():
    """Why each run gets copies (page_copies): navigation returns and marks the very object it was given."""
    at = AppTest.from_function(_navigate).run()
    assert not at.exception and at.session_state["same_object"] and at.session_state["marked"]


def _copies():
    import streamlit as st

    from ui import views
    from ui.runtime import streamlit_private

    made = views._made_pages()  # made in a run: outside one, st.Page returns before it knows its path
    first, second = streamlit_private.page_copies(made), streamlit_private.page_copies(made)
    st.session_state["distinct"] = all(a is not b and a._script_hash == b._script_hash == p._script_hash
                                       for a, b, p in zip(first, second, made))
    st.session_state["untouched"] = not any(p._can_be_called for p in made)  # the process's own never run


def test_page_copies_are_distinct_objects_of_the_same_page():
    at = AppTest.from_function(_copies).run()
    assert not at.exception and at.session_state["distinct"] and at.session_state["untouched"]


def test_frontend_chunks_are_named_after_their_element():
    assert streamlit_private.frontend_chunks(("PlotlyChart", "NoSuchElement")) == preload.chunks()[:1]
    assert re.fullmatch(r"PlotlyChart\.[\w-]+\.js", preload.chunks()[0])


def _frontend() -> str:
    return "".join(p.read_text(errors="ignore") for p in streamlit_private.STATIC.glob("*.js"))


def test_the_app_root_reports_its_script_state_as_a_data_attribute():
    code = _frontend()
    assert '"stApp"' in code or "'stApp'" in code or "stApp" in code
    assert "data-test-script-state" in code and "notRunning" in code


def test_every_data_testid_presenter_mode_styles_exists_in_the_frontend():
    code = _frontend()
    ids = re.findall(r'data-testid="(\w+)"', streamlit_private.PRESENTER_STYLE)
    assert len(ids) >= 7 and [i for i in ids if i not in code] == []
    assert "modebar-container" in code


def test_nothing_else_reads_streamlits_private_parts():
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    private = re.compile(r"pages_manager|set_script_intent|_can_be_called|\[data-testid|static/static/js|"
                         r"streamlit\.runtime|get_script_run_ctx")
    found = [str(p.relative_to(root)) for p in [*root.glob("ui/*.py"), *root.glob("views/*.py"), root / "app.py"]
             if p.name != "streamlit_private.py" and private.search(p.read_text())]
    assert found == []


def test_in_a_run_tells_a_page_from_a_plain_thread():
    assert not streamlit_private.in_a_run()
    at = AppTest.from_function(_in_a_run).run()
    assert not at.exception and at.session_state["in_a_run"]


def _in_a_run():
    import streamlit as st

    from ui.runtime import streamlit_private

    st.session_state["in_a_run"] = streamlit_private.in_a_run()


def test_st_is_the_pinned_version():
    assert st.__version__ == "1.67.0" or st.__version__.startswith("1.67")


def test_st_stop_blocks_later_elements_and_the_hook_draws_before_it():
    at = AppTest.from_function(_stops).run()
    assert not at.exception
    assert [w.value for w in at.warning] == ["drawn by the hook"]  # the one in `finally` is dropped by the stop
    assert "_before_stop" not in at.session_state


def _stops():
    import streamlit as st

    from ui.runtime import streamlit_private

    place = st.empty()
    streamlit_private.before_stop(lambda: place.warning("drawn by the hook"))
    try:
        st.stop()
    finally:
        st.warning("after the stop")


def test_next_page_is_a_waiting_whole_app_reruns_and_a_later_request_takes_its_page():
    """next_page reads the waiting request (a fragment's keeps this run's page), and why ui.runtime.work asks it: a
    rerun requested while another waits runs the later one's page."""
    assert streamlit_private.page() is None and streamlit_private.next_page() is None
    at = AppTest.from_function(_waiting).run()
    assert not at.exception
    assert at.session_state["seen"] == {"here": True, "fragment": True, "whole app": "elsewhere", "later": "here"}


def _waiting():
    import streamlit as st
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    from ui.runtime import streamlit_private

    if "seen" in st.session_state:
        return
    seen = st.session_state["seen"] = {}  # no st call below until the last line: each would yield to the request
    requests, here = get_script_run_ctx().script_requests, streamlit_private.page()
    seen["here"] = streamlit_private.next_page() == here
    requests.request_rerun(RerunData(page_script_hash="elsewhere", fragment_id="f"))
    seen["fragment"] = streamlit_private.next_page() == here
    requests.request_rerun(RerunData(page_script_hash="elsewhere"))
    seen["whole app"] = streamlit_private.next_page()
    requests.request_rerun(RerunData(page_script_hash=here))
    seen["later"] = "here" if streamlit_private.next_page() == here else streamlit_private.next_page()
