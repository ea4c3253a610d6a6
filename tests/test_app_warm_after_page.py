"""app.py starts the server's warm-up (ui/runtime/warm.py: torch, transformers and the default model, seconds of held
GIL)
only once the page has run, so the home page's first paint does not share the interpreter with those imports."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import streamlit as st
from streamlit.testing.v1 import AppTest
import ui.runtime.warm
# the order is the point here, not the imports (tests/ui/runtime/test_warm.py runs them)
ui.runtime.warm._warm = ui.runtime.warm._done.set
started_before_run = []
navigation = st.navigation
def watched(pages, **kw):
    page = navigation(pages, **kw)
    run = page.run
    def run_watched():
        started_before_run.append(ui.runtime.warm._thread is not None)
        run()
    page.run = run_watched
    return page
st.navigation = watched
at = AppTest.from_file("app.py", default_timeout=60).run()
assert not at.exception and at.title[0].value == "Attention Explorer", at
print(started_before_run, ui.runtime.warm._thread is not None)
"""


def test_warm_up_starts_after_the_page_has_run():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[False] True"  # not started while the page ran; started after


COLD = """
import sys
from streamlit.testing.v1 import AppTest
import ui.runtime.warm
ui.runtime.warm.start = lambda: None  # the page's own imports, without the warm-up's
at = AppTest.from_file("app.py", default_timeout=60).run()
assert not at.exception and at.title[0].value == "Attention Explorer", at
print(sorted(m for m in ("pandas", "sqlalchemy", "classroom.store") if m in sys.modules))
"""


def test_home_page_runs_without_pandas_or_the_class_store():
    # the lesson's class (ui.classroom.class_mode) loads pandas and the store's SQLAlchemy where a class is used:
    # about 0.7 s
    # of CPU that every first paint paid before
    out = subprocess.run([sys.executable, "-c", COLD], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
