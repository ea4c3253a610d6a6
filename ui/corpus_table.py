"""Head tables that stay readable at a thousand heads (32 layers × 32 heads): above PAGE rows, a search box,
a layer range and pages of PAGE rows; at or under PAGE rows the table is shown whole, with no extra widget.

paged(rows, n_layers, key) draws the widgets and returns the rows to show with their positions in `rows`;
row_of(key, seen) maps a selected row of the shown table back to that position (what a row pick means).
Rows are dicts whose "head" is "L3 H7" (and, for pairs, "twin"); a search matches any of their text cells.
Filters and pages only: nothing is computed here.

    paged([{"head": "L0 H0", "label": "previous token"}, ...], 32, "corpus_table") -> (shown rows, positions)
"""
from __future__ import annotations

import streamlit as st

from ui.state import BIND, clamp

PAGE = 100  # rows per page: a table of 100 rows scrolls like the 72-head one


def _layer(head: str) -> int:
    """'L12 H3' -> 12"""
    return int(head.split()[0][1:])


def paged(rows: list[dict], n_layers: int, key: str) -> tuple[list[dict], list[int]]:
    """The rows to show and their positions in `rows` (all of them when there are at most PAGE)."""
    keep = list(range(len(rows)))
    if len(rows) > PAGE:
        a, b, c = st.columns([2, 2, 1])
        want = a.text_input("Search heads", key=f"{key}_find", placeholder="e.g. L3 H7, previous, [CLS]", **BIND,
                            help="Keeps the rows with this text in a cell (head name, label, twin), case ignored.")
        lo, hi = (b.slider("Layers", 0, n_layers - 1, (0, n_layers - 1), key=f"{key}_layers", **BIND,
                           help="Keeps the heads of these layers.") if n_layers > 1 else (0, 0))
        want = want.strip().lower()
        keep = [i for i in keep if lo <= _layer(rows[i]["head"]) <= hi
                and (not want or any(want in str(v).lower() for v in rows[i].values() if isinstance(v, str)))]
        pages = max(1, -(-len(keep) // PAGE))
        clamp(f"{key}_page", 1, pages)  # fewer pages after a search: a kept page number past them starts again
        page = c.number_input("Page", 1, pages, 1, key=f"{key}_page", help=f"{PAGE} rows a page") if pages > 1 else 1
        page = min(int(page), pages)
        st.caption(f"{len(keep):,} of {len(rows):,} rows match" + (f"; page {page} of {pages}" if pages > 1 else ""))
        keep = keep[(page - 1) * PAGE:page * PAGE]
    st.session_state[f"_{key}_shown"] = keep
    return [rows[i] for i in keep], keep


def row_of(key: str, seen: list[int]) -> int | None:
    """The position in the full rows of the first selected row of the table last shown under `key`."""
    shown = st.session_state.get(f"_{key}_shown")
    if not seen:
        return None
    if shown is None:
        return seen[0]
    return shown[seen[0]] if seen[0] < len(shown) else None
