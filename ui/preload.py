"""The browser loads the code of the elements views draw while it is idle, not on a view's first visit.

Streamlit's frontend fetches each element's code the first time a page shows one, from a chunk named after
it (PlotlyChart.<hash>.js: 4.7 MB, about 1.5 s of a laptop's CPU to compile and run). Without this, a
student's first chart waits for it. `browser()` adds to the sidebar a script, the same constant text for
everyone (never user input), that imports those chunks one at a time when the page is idle, at the address
Streamlit itself uses (next to its own index chunk): its later import finds the module loaded. Chunk names
are read from the installed Streamlit (pinned in requirements.lock); a name not found is skipped, and a test
checks that each is found in the pinned version. What it does not do: fetch anything from outside the app,
or change what any element shows.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import streamlit as st

# the elements views use, the heaviest and commonest first; each name is a chunk of Streamlit's frontend
ELEMENTS = ("PlotlyChart", "rehype-katex", "StreamlitSyntaxHighlighter", "Slider", "DownloadButton",
            "Multiselect", "NumberInput", "Metric", "Progress", "Button", "Spinner", "DataFrame")
STATIC = Path(st.__file__).parent / "static" / "static" / "js"

SCRIPT = """<script>
(() => {
  if (window.__elementsPreloading) return;  // once a page: every run draws this element again
  const index = [...document.scripts].find(s => /\\/static\\/js\\/index\\.[\\w-]+\\.js$/.test(s.src));
  if (!index) return;
  window.__elementsPreloading = true;
  window.__elementsPreloaded = 0;
  const queue = CHUNKS;
  const next = () => {
    const name = queue.shift();
    if (!name) return;
    import(new URL("./" + name, index.src).href).catch(() => {})
      .finally(() => { window.__elementsPreloaded++; requestIdleCallback(next, {timeout: 2000}); });
  };
  requestIdleCallback(next, {timeout: 2000});
})();
</script>"""


@functools.cache
def chunks() -> tuple[str, ...]:
    """File names of the ELEMENTS' chunks in the installed Streamlit, in ELEMENTS' order; a name with no
    single match is left out: ("PlotlyChart.D9Z0_fxz.js", ...)."""
    found = (sorted(STATIC.glob(f"{name}.*.js")) for name in ELEMENTS)
    return tuple(m[0].name for m in found if len(m) == 1)


def browser() -> None:
    """The sidebar element whose script loads the chunks (a no-op after the page's first run)."""
    with st.sidebar:
        st.html(SCRIPT.replace("CHUNKS", json.dumps(list(chunks()))), unsafe_allow_javascript=True)
