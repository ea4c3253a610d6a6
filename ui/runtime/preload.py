"""The browser loads the code of the elements views draw while the app is idle, not on a view's first visit.

Streamlit's frontend fetches each element's code the first time a page shows one, from a chunk named after
it (PlotlyChart.<hash>.js: 4.7 MB, about 1.5 s of a laptop's CPU to compile and run). Without this, a
student's first chart waits for it. `browser()` adds to the sidebar a script, the same constant text for
everyone (never user input), that imports those chunks one at a time, each once the app has been idle (no
run) for a second, so a page's own paint never waits for them. It imports them at the address Streamlit
itself uses (next to its own index chunk), so Streamlit's later import finds the module loaded. Chunk names
are read from the installed Streamlit (pinned in requirements.lock; ui.runtime.streamlit_private, with the app root's
data-testid the script watches); a name not found is skipped, and a test checks that each is found. What it
does not do: fetch anything from outside the app, or change what any element shows.
"""
from __future__ import annotations

import functools
import json

import streamlit as st

from ui.runtime import streamlit_private

SCRIPT = """<script>
(() => {
  if (window.__elementsPreloading) return;  // once a page: every run draws this element again
  const index = [...document.scripts].find(s => /\\/static\\/js\\/index\\.[\\w-]+\\.js$/.test(s.src));
  if (!index) return;
  window.__elementsPreloading = true;
  window.__elementsPreloaded = 0;
  const queue = CHUNKS;
  const idle = () => APP_IDLE;
  let quiet = 0;
  const tick = () => {  // one chunk each time the app has been idle a second: never during a run or its drawing
    quiet = idle() ? quiet + 1 : 0;
    if (quiet < 2) return setTimeout(tick, 500);
    const name = queue.shift();
    if (!name) return;
    import(new URL("./" + name, index.src).href).catch(() => {})
      .finally(() => { window.__elementsPreloaded++; quiet = 0; setTimeout(tick, 500); });
  };
  setTimeout(tick, 500);
})();
</script>"""


@functools.cache
def chunks() -> tuple[str, ...]:
    """File names of the preloaded elements' chunks in the installed Streamlit (streamlit_private.PRELOAD_ELEMENTS,
    in its order); a name with no single match is left out: ("PlotlyChart.D9Z0_fxz.js", ...)."""
    return streamlit_private.frontend_chunks()


def browser() -> None:
    """The sidebar element whose script loads the chunks (a no-op after the page's first run)."""
    with st.sidebar:
        st.html(SCRIPT.replace("CHUNKS", json.dumps(list(chunks()))).replace("APP_IDLE", streamlit_private.APP_IDLE_JS),
                unsafe_allow_javascript=True)
