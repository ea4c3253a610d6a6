"""python -m prune on a classifier trained here: the head, the rows, importance, the plan, timing and the export."""
import io
import re
import sys

import numpy as np
import pytest

from prune.__main__ import main, run
from tests.experiments.test_own import value_row_importance


def test_cli_plans_times_and_exports(classifier, tmp_path, one_thread):
    from models import task_head

    folder, data = classifier
    (tmp_path / "rows.csv").write_bytes(data)
    printed = io.StringIO()
    got = run(["--model", str(folder), "--data", str(tmp_path / "rows.csv"), "--text-col", "text", "--label-col",
               "label", "--keep", "0.9", "--out", str(tmp_path / "pruned"), "--batch", "4", "--seq-len", "16",
               "--repeats", "3"], printed)
    text = printed.getvalue()
    assert "BertForSequenceClassification: sequence classification head, 2 labels (negative, positive)" in text
    assert "40 rows score the heads, 40 held-out rows measure accuracy" in text
    task, res = got["task"], got["plan"]
    fd = value_row_importance(task_head.to_float64(task.tm.model), task.score)
    np.testing.assert_allclose(res.importance, fd / np.linalg.norm(fd, axis=1, keepdims=True), rtol=1e-4)
    # stops at the threshold: the plan's step keeps 90 %, the next iterative step (if any) does not
    assert res.iterative[res.stop] >= res.threshold == pytest.approx(0.9 * res.base)
    assert res.stop == len(res.sizes) - 1 or res.iterative[res.stop + 1] < res.threshold
    heads = [{(layer, h) for layer, hs in p.items() for h in hs} for p in res.iterative_plans]
    assert all(a < b for a, b in zip(heads, heads[1:]))  # each step only adds heads
    assert res.value >= res.threshold and sum(map(len, res.plan.values())) >= 1
    for line in ("removed  %  iterative  one-pass  reverse  random (3 seeds)", f"Plan ({res.recommended}, recommended)",
                 "Speed at batch 4 × 16 tokens on cpu (1 thread)", "parameters saved"):
        assert " ".join(line.split()) in " ".join(text.split()), line
    assert len([ln for ln in text.splitlines() if ln.strip().split(" ")[0].isdigit()]) >= len(res.sizes)
    check = got["check"]
    assert check["reload_ok"] and f"equal the gated model's on {check['predictions']}/{check['predictions']}" in text


@pytest.mark.parametrize("rows, message", [
    (b"review,label\na,positive\n", "prune: The file has no column 'text': its columns are review, label.\n"),
    (b"text,label\na,positive\nb,neutral\n", "prune: Labels 'neutral' (row 2) are not among the model's labels"),
])
def test_cli_bad_rows_are_one_sentence_and_exit_2(classifier, tmp_path, monkeypatch, capsys, rows, message):
    (tmp_path / "rows.csv").write_bytes(rows)
    monkeypatch.setattr(sys, "argv", ["prune", "--model", str(classifier[0]), "--data", str(tmp_path / "rows.csv"),
                                      "--text-col", "text"])
    with pytest.raises(SystemExit) as code:
        main()
    err = capsys.readouterr().err
    assert code.value.code == 2 and err.startswith(message) and err.count("\n") == 1


@pytest.mark.slow  # an export, then the plan and the timing
def test_cli_on_an_export_names_heads_as_the_original_model_did(classifier, tmp_path, one_thread):
    """An export that lost L0 H0 holds L0's H1-H3 at positions 0-2: the importance table leaves L0 H0 blank and the
    plan names original heads (the numbering of its config's pruned_heads and of its traces)."""
    from experiments import own
    from tests.experiments.test_own import _task

    folder, data = classifier
    assert own.export_and_check(_task(classifier), {0: [0]}, str(tmp_path / "out"))["reload_ok"]
    (tmp_path / "rows.csv").write_bytes(data)
    printed = io.StringIO()
    got = run(["--model", str(tmp_path / "out"), "--data", str(tmp_path / "rows.csv"), "--text-col", "text",
               "--label-col", "label", "--keep", "0.5", "--batch", "4", "--seq-len", "16", "--repeats", "3"], printed)
    lines = printed.getvalue().splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.split() == ["H0", "H1", "H2", "H3"])
    by_position = got["plan"].importance                                   # (L, heads now): L0 holds 3
    ends = lambda line: {m.group(): m.end() for m in re.finditer(r"\S+", line)}  # noqa: E731  (right-aligned cells)
    row = [(m.group(), m.end()) for m in re.finditer(r"\S+", lines[header + 1])]
    assert row == [("L0", row[0][1])] + [(f"{v:.3f}", ends(lines[header])[f"H{h}"])  # under H1-H3, H0 blank
                                         for h, v in zip((1, 2, 3), by_position[0, :3])]
    said = next(ln for ln in lines if ln.startswith("Plan ("))
    names = said.split(" heads: ")[1].split(";")[0].split(", ")
    want = [f"L{layer} H{p + (layer == 0)}" for layer, ps in sorted(got["plan"].plan.items()) for p in ps]
    assert names == want and "L0 H0" not in names and names != ["none"]
