"""The first page paints without what it does not draw: app.py and the home view import torch, transformers and the
rest only when needed (the server's one warm-up thread, ui/runtime/warm.py, imports them beside it; switched off here
to see the page's own), and never load Streamlit's emoji catalog (~0.4 s of the server: an emoji icon in the menu, on
a link or as the tab's icon would). The home page is a link and a line for every view, in menu order, and no picture.
Measured in the browser by `python -m bench --only cold_start` (first_paint_s); here, what it stands on.

(plotly is not checked: `import streamlit` itself imports it. numpy is checked on the frame's imports, not on the
whole run: the tab's icon, set at the end of a run, is read by Streamlit with numpy.)
"""
import functools
import json
import subprocess
import sys
from pathlib import Path

from ui.views import present

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "tokenizers", "networkx", "scipy", "streamlit.emojis")
# a fresh Python: each module is loaded once per process, so another test in this worker would hide it
SCRIPT = """
import json, sys
from streamlit.testing.v1 import AppTest
import ui.runtime.warm
ui.runtime.warm.start = lambda: None
at = AppTest.from_file("app.py", default_timeout=60).run()
assert not at.exception and at.title[0].value == "Attention Explorer", at

def elements(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from elements(child)

shown = list(elements(at.main))
print(json.dumps({"loaded": sorted(m for m in HEAVY if m in sys.modules),
                  "links": [e.proto.page for e in shown if e.type == "page_link"],
                  "labels": [e.proto.label for e in shown if e.type == "page_link"],
                  "types": sorted({e.type for e in shown})}))
""".replace("HEAVY", repr(HEAVY))


@functools.cache
def _first_run() -> dict:
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_home_page_runs_without_heavy_imports():
    assert _first_run()["loaded"] == []


def test_the_home_page_links_every_view_with_its_line_and_shows_no_picture():
    run, views = _first_run(), present()[1:]
    assert run["links"] == [v.stem for v in views]  # every view but Home, in menu order
    assert run["labels"] == [f"**{v.title}**: {v.line}" for v in views]
    assert "imgs" not in run["types"] and "image" not in run["types"]


def test_every_views_icon_is_a_material_symbol():
    from streamlit.material_icon_names import ALL_MATERIAL_ICONS

    for view in present():
        assert view.icon.startswith(":material/") and view.icon[10:-1] in ALL_MATERIAL_ICONS, view


def test_the_frames_own_imports_leave_numpy_and_the_emoji_catalog_unloaded():
    """app.py's imports, as written there, in a fresh Python: neither numpy (~0.05 s) nor the emoji catalog comes
    with them, so the first page's run reaches the sidebar and the heading without either."""
    frame = (ROOT / "app.py").read_text().splitlines()
    imports = "\n".join(line for line in frame if line.startswith(("import ", "from ")))
    assert "from models import" in imports and "from ui.export import" in imports  # the lines this reads
    probe = imports + "\nimport sys; print(sorted({'numpy', 'streamlit.emojis'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
