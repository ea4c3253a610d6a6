"""The first page paints without torch or transformers: app.py and the home view import them only when needed
(the server's one warm-up thread, ui/runtime/warm.py, imports them beside it; switched off here to see the page's own).

(plotly is not checked: `import streamlit` itself imports it.)
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
from streamlit.testing.v1 import AppTest
import ui.runtime.warm
ui.runtime.warm.start = lambda: None
at = AppTest.from_file("app.py", default_timeout=60).run()
assert not at.exception and at.title[0].value == "Attention Explorer", at
print(sorted(m for m in ("torch", "transformers", "tokenizers", "networkx", "scipy") if m in sys.modules))
"""


def test_home_page_runs_without_heavy_imports():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
