"""The server's warm-up imports the heavy libraries on one thread and loads the default model once, then
freezes what it made, so that the full collection Streamlit runs after every page skips it. Started by the home page's
run, it first lets that page's browser fetch its code (warm.LET_PAINT_S); a session that needs it starts it at once."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
import sys, threading
from ui.runtime import cache, warm
assert "torch" not in sys.modules and "transformers" not in sys.modules
warm.LET_PAINT_S = 3600          # a first page whose browser never finishes: only a session's wait() starts it
warm.start()
warm._thread.join(2)
assert warm._thread.is_alive() and "torch" not in sys.modules   # waiting: its first import brings torch
threads = [threading.Thread(target=warm.wait) for _ in range(8)]   # eight sessions arriving at once: it starts now
for t in threads: t.start()
for t in threads: t.join()
assert warm.wait(0) and all(m in sys.modules for m in warm.HEAVY)
assert [t.name for t in threading.enumerate()].count("warm-up") == 0   # one thread, finished
import gc
print(gc.get_freeze_count(), len(gc.get_objects()))   # frozen, and what a full collection still visits
print(cache.stats()["models"]["entries"])
"""


@pytest.mark.slow  # every heavy import and the default model in a fresh process: ~10 s
def test_one_warm_up_for_many_sessions_imports_everything_and_loads_the_default_model():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=240,
                         env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    *_, counts, entries = out.stdout.strip().splitlines()
    assert entries == "1"
    frozen, visited = map(int, counts.split())
    assert frozen > 100_000 and visited < frozen // 10  # unfrozen, ~0.3 s of CPU for each page's collection
