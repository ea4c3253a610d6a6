"""The home page's first run in a fresh server process: a link and a line for every view, in menu order, and nothing
that holds the first paint back. Measured in the browser by `python -m bench --only cold_start` (first_paint_s); here
what it stands on: no emoji check (Streamlit's emoji catalog took ~0.4 s of the server to load) and no pictures."""
import json
import os
import subprocess
import sys

from ui.views import present

# a fresh Python: the catalog is loaded once per process, so another test in this worker would hide it
FIRST_RUN = """
import json, sys
from ui.runtime import warm
warm.start = lambda: None  # the warm-up loads the catalog on purpose, once the first page has run
from streamlit.testing.v1 import AppTest

at = AppTest.from_file("app.py", default_timeout=60).run()
assert not at.exception, at.exception

def elements(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from elements(child)

shown = list(elements(at.main))
print(json.dumps({"catalog": "streamlit.emojis" in sys.modules,
                  "links": [e.proto.page for e in shown if e.type == "page_link"],
                  "labels": [e.proto.label for e in shown if e.type == "page_link"],
                  "types": sorted({e.type for e in shown})}))
"""


def _first_run() -> dict:
    out = subprocess.run([sys.executable, "-c", FIRST_RUN], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_home_pages_first_run_links_every_view_without_loading_the_emoji_catalog():
    run = _first_run()
    views = present()[1:]
    assert run["links"] == [v.stem for v in views]  # every view but Home, in menu order
    assert run["labels"] == [f"**{v.title}**: {v.line}" for v in views]
    assert not run["catalog"]  # an emoji icon in the menu, on a link or as the tab's icon would load it
    assert "imgs" not in run["types"] and "image" not in run["types"]  # no pictures on the first page


def test_every_views_icon_is_a_material_symbol():
    from streamlit.material_icon_names import ALL_MATERIAL_ICONS

    for view in present():
        assert view.icon.startswith(":material/") and view.icon[10:-1] in ALL_MATERIAL_ICONS, view


def test_the_frames_own_imports_leave_numpy_and_the_emoji_catalog_unloaded():
    """app.py's imports, as written there, in a fresh Python: neither numpy (~0.05 s) nor the emoji catalog comes
    with them, so the first page's run reaches the sidebar and the heading without either."""
    from pathlib import Path

    frame = (Path(__file__).resolve().parents[2] / "app.py").read_text().splitlines()
    imports = "\n".join(line for line in frame if line.startswith(("import ", "from ")))
    assert "from models import" in imports and "from ui.export import" in imports  # the lines this reads
    probe = imports + "\nimport sys; print(sorted({'numpy', 'streamlit.emojis'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
