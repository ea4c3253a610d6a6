"""python -m bench.serve_stats FILE run app.py ...: the app server (Streamlit's command line, in this process) whose
stores can be read from outside: on SIGUSR1 it writes ui.runtime.cache.stats() (bytes, budget and entries of each store)
as JSON to FILE. bench.browser.serve(stats=...) starts it, bench.browser.store_bytes asks it; used by cold_start's
per_view figure. It changes nothing in the app.
"""
from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path


def _dump(out: Path) -> None:
    cache = sys.modules.get("ui.runtime.cache")  # the app's own module: the script runs in this process
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache.stats() if cache is not None else {}))
    tmp.replace(out)


def main() -> None:
    out = Path(sys.argv[1])
    # on a thread of its own: the handler runs on the main thread, which must not wait for a store's lock
    signal.signal(signal.SIGUSR1, lambda *_: threading.Thread(target=_dump, args=(out,), daemon=True).start())
    from streamlit.web import cli

    sys.argv = ["streamlit", *sys.argv[2:]]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
