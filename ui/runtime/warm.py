"""Start-up: import the heavy libraries once, on one thread, before sessions use them; load the default model.

Several sessions opening a fresh server at once each ran their first import of pandas (or torch, plotly...)
on their own script thread; two threads importing packages that import each other can meet a module half
made ("partially initialized module 'pandas'"). Here the first run of app.py starts one thread that imports
them all in order and loads the default model into the model store; `wait()` holds a session until it has
finished, and app.py calls it before any view but the home page, so the home page still paints at once.
Later runs find it done and pay nothing.

    start()   # idempotent; the first call starts the warm-up thread
    wait()    # returns once the imports (and the default model) are ready
"""
from __future__ import annotations

import gc
import importlib
import threading

HEAVY = (  # in dependency order: each is imported after what it imports
    "numpy", "pyarrow", "pandas", "scipy.sparse", "scipy.sparse.csgraph", "networkx",
    "plotly.graph_objects", "plotly.io", "plotly.colors", "torch", "safetensors", "tokenizers",
    "transformers", "transformers.models.bert.modeling_bert", "huggingface_hub",
    "streamlit.dataframe_util",
    "streamlit.emojis",  # its catalog, which a view's first emoji icon (a button's, a link's) would load: ~0.4 s
)

# how long the warm-up lets the first page's browser fetch its code before it takes the interpreter: the home page's
# first paint waits for about forty of Streamlit's chunks after the page's run, each served by this process
LET_PAINT_S = 2.0

_lock = threading.Lock()
_thread: threading.Thread | None = None
_done = threading.Event()
_needed = threading.Event()  # a session waits for the warm-up: it starts at once


def _warm() -> None:
    _needed.wait(LET_PAINT_S)
    try:
        import models

        models.defer_torchao()  # before transformers' model classes: torchao is imported only when it is used
        for name in HEAVY:
            importlib.import_module(name)
        from ui.runtime import cache
        from ui.state import DEFAULT_MODEL

        cache.model(DEFAULT_MODEL, "cpu", "float32")
        gc.collect()
        gc.freeze()  # what lives as long as the server leaves later collections: Streamlit collects after every run
    finally:
        _done.set()  # a failure shows where it belongs: in the view that needs the module


def start() -> None:
    """Start the warm-up thread once per process."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_warm, name="warm-up", daemon=True)
            _thread.start()


def wait(timeout_s: float = 300.0) -> bool:
    """Block until the warm-up has finished (starting it if needed, at once); True when it has."""
    _needed.set()
    start()
    return _done.wait(timeout_s)
