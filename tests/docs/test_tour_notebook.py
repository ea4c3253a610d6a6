"""docs/notebooks/tour.ipynb runs top to bottom on a fresh kernel (nbclient, the optional extra `notebook`), from
the folder a researcher opens it in, and its outputs are what a notebook shows: plotly figures as plotly's own
mime type, the head view as a frame with no network reference, the DLA of an encoder's trace as one sentence."""
import re
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "notebooks" / "tour.ipynb"
pytestmark = pytest.mark.slow


def test_the_tour_runs_on_a_fresh_kernel():
    nbformat = pytest.importorskip("nbformat", reason="make notebook installs the notebook extra")
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")  # kept without outputs
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = [o.get("data", {}) for o in outputs if o.output_type in ("display_data", "execute_result")]
    figures = [d for d in shown if "application/vnd.plotly.v1+json" in d]
    assert len(figures) >= 8  # heads, one head, rollout, probabilities, DLA bars and map, patching, attribution
    views = [d["text/html"] for d in shown if "text/html" in d and d["text/html"].startswith("<iframe srcdoc=")]
    assert len(views) == 1 and not re.search(r"(src|href)\s*=\s*[\"']?https?:", views[0])
    # what the cells print: stdout alone (kaleido's browser driver may log to stderr between two prints)
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream" and o.get("name") == "stdout")
    assert "figures.dla draws the table api.next_token(model, text) returns" in printed
    assert "True heads.html\nTrue heads.svg\nTrue heads.png\nhead_view.html" in printed
    assert "pruned-bert" in printed
