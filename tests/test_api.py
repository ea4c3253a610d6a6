"""docs/API.md runs as written, and each api function agrees with the module it wraps."""
import re
from pathlib import Path

import numpy as np

import api

DOC = Path(__file__).resolve().parent.parent / "docs" / "API.md"


def test_every_block_of_the_api_page_runs_as_written(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 7
    scope: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), scope)
    out = capsys.readouterr().out
    assert "(6, 12, 16, 16)" in out
    parts = scope["parts"]
    assert abs(parts["logit"].sum() - parts.attrs["logit"]) < 1e-3
    restored = scope["restored"]
    assert len(restored) == 16 and set(restored.columns) == {"layer", "head", "restored"}
    assert restored.attrs["clean_diff"] > restored.attrs["corrupt_diff"]
    circuit = scope["circuit"]
    assert len(circuit) == 10 and list(circuit.columns) == ["sender", "receiver", "score"]
    assert 0 < circuit.attrs["faithfulness"] <= 1.5
    assert type(scope["fig"]).__name__ == "Figure" and scope["view"]._repr_html_().startswith("<iframe srcdoc=")
    assert "True head_view.html" in out and "figures.dla draws the table api.next_token(model, text)" in out


def test_heads_table_matches_the_finder():
    from analysis import patterns

    bert = api.load("bert")
    trace = api.attend(bert, "The river bank was quiet.")
    table = api.heads(trace)
    scores = patterns.behaviour_scores(trace.weights, trace.tokens)
    assert len(table) == 72 and (table["layer"] * 12 + table["head"] == np.arange(72)).all()
    np.testing.assert_array_equal(table["previous token"].to_numpy(), scores["previous token"].ravel())
    assert table.loc[2, "label"] == patterns.labels(patterns.sentence_stats(trace.weights, trace.tokens))[0][2]
