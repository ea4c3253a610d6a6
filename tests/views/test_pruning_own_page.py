"""AppTest of the pruning view on your own model and rows: a classifier trained here, a CSV uploaded."""
import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.experiments.test_own import value_row_importance

OWN = "your model on your labelled rows"


def _own_page(folder) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = str(folder)
    at.run()
    at.switch_page("views/pruning.py").run()
    assert at.radio(key="prune_source").value == OWN  # a classifier's head needs your rows: the built-ins cannot use it
    at.radio(key="prune_source").set_value(OWN).run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    return " ".join(str(e.value) for e in [*at.caption, *at.markdown, *at.success, *at.info, *at.error, *at.warning])


def test_own_model_and_rows_plan_time_and_export(classifier, one_thread):
    from data.labelled import read_table
    from experiments import own
    from models import task_head

    folder, data = classifier
    at = _own_page(folder)
    assert "BertForSequenceClassification: sequence classification head, 2 labels (negative, positive)" in _texts(at)
    at.file_uploader[0].upload("rows.csv", data, "text/csv").run()
    assert not at.exception, at.exception
    said = _texts(at)
    assert "Metric: accuracy on 40 held-out rows (40 others score the heads)" in said.replace("**", "")
    tm = task_head.load(str(folder))
    task = own.prepare(tm, read_table(data, "rows.csv", 10**6), "text", "label", None, own.Settings())
    assert 0.5 <= task.chance < 1  # the majority label's share of the held-out rows
    assert f"chance: {task.chance:.1%} (always the most common label of these rows)" in said.replace("**", "")
    assert at.code[0].value.startswith(f"python -m prune --model {folder} --data rows.csv --text-col text "
                                       "--label-col label --keep 0.9 --step 0.1")
    at.toggle(key="prune_own_run").set_value(True).run()
    assert not at.exception, at.exception
    colour = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["marker"]["color"]
    grid = np.frombuffer(base64.b64decode(colour["bdata"]), colour["dtype"]) if isinstance(colour, dict) else colour
    fd = value_row_importance(task_head.to_float64(tm.model), task.score)
    np.testing.assert_allclose(grid, (fd / np.linalg.norm(fd, axis=1, keepdims=True)).ravel(), rtol=1e-4)
    assert at.success[0].value.startswith("Recommended (")
    assert "of 100.0% with every head (the plan must keep 90%)" in at.success[0].value

    at.toggle(key="prune_own_export").set_value(True).run()
    assert not at.exception, at.exception
    said = _texts(at)
    assert "from_pretrained as PrunedBertForSequenceClassification: 40/40 predictions" in said
    assert list(at.dataframe[-1].value["model"]) == ["full", "pruned"]
    gap = float(said.split("largest difference ")[1].split(" ")[0])
    assert gap < 1e-9


def test_own_data_says_what_is_wrong(classifier, tmp_path):
    folder, _ = classifier
    at = _own_page(folder)
    at.file_uploader[0].upload("rows.csv", b"review,label\nfine,positive\n", "text/csv").run()
    assert not at.exception and at.selectbox(key="prune_own_text").value == "review"
    at.file_uploader[0].set_value(("rows.csv", b"text,label\nfine,positive\nok,neutral\n", "text/csv")).run()
    assert not at.exception
    assert at.error[0].value.startswith("Labels 'neutral' (row 2) are not among the model's labels")
    base = tmp_path / "base"
    from transformers import BertModel

    BertModel.from_pretrained(folder).save_pretrained(base)
    at.sidebar.text_input(key="hf_spec").set_value(str(base)).run()
    assert "no task head to judge heads by (its config names BertModel)" in at.error[0].value
    at.sidebar.selectbox(key="model").set_value("bert").run()
    assert "Your own model comes in through the sidebar" in at.info[0].value


@pytest.mark.slow  # an export, then the plan through AppTest
def test_own_export_loaded_back_names_heads_as_the_original_model_did(classifier, tmp_path, one_thread):
    """A classifier export that lost L0 H0 holds L0's H1-H3 at positions 0-2: the importance grid and the recommended
    plan name the original heads (L0 H0 is never offered), the numbering its config's pruned_heads and traces use."""
    from experiments import own
    from tests.experiments.test_own import _task

    folder, data = classifier
    assert own.export_and_check(_task(classifier), {0: [0]}, str(tmp_path / "out"))["reload_ok"]
    assert json.loads((tmp_path / "out" / "config.json").read_text())["pruned_heads"] == {"0": [0]}
    at = _own_page(tmp_path / "out")
    at.file_uploader[0].upload("rows.csv", data, "text/csv").run()
    at.slider(key="prune_own_keep").set_value(0.5)  # some heads can go
    at.toggle(key="prune_own_run").set_value(True).run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    hover = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["hovertext"]
    assert [h.split("<br>")[0] for h in hover] == ["L0 H1", "L0 H2", "L0 H3", "L1 H0", "L1 H1", "L1 H2", "L1 H3"]
    removed = at.success[0].value.split("heads (")[1].split(")")[0]
    assert removed != "none" and "L0 H0" not in removed, removed
    assert set(removed.split(", ")) <= {h.split("<br>")[0] for h in hover}


def test_another_file_puts_its_own_columns_in_the_boxes(classifier):
    """A second file whose columns differ: the boxes showed the first file's columns (kept by the link's parameters)
    while the task read the second's."""
    folder, _ = classifier
    at = _own_page(folder)
    at.file_uploader[0].upload("a.csv", b"sentence,score\nfine,1\nbad,0\n", "text/csv").run()
    assert at.selectbox(key="prune_own_text").value == "sentence" and at.query_params.get("prune_own_text") in (
        None, "sentence", ["sentence"])
    at.query_params["prune_own_text"], at.query_params["prune_own_label"] = "sentence", "score"  # as a link keeps them
    at.file_uploader[0].set_value(("rows.csv", b"text,label\nfine,positive\nbad,negative\n", "text/csv")).run()
    assert not at.exception, at.exception
    assert (at.selectbox(key="prune_own_text").value, at.selectbox(key="prune_own_label").value) == ("text", "label")


def test_the_run_and_export_switches_stay_out_of_the_link(classifier):
    """A link brings no file, so a run switched on in it could never start: after a reload the page said "Some link
    parameters were not used: 'prune_own_run'"."""
    folder, data = classifier
    at = _own_page(folder)
    at.file_uploader[0].upload("rows.csv", data, "text/csv").run()
    at.toggle(key="prune_own_run").set_value(True).run()
    assert not at.exception, at.exception
    assert at.toggle(key="prune_own_run").proto.query_param_key == ""  # bound to no query parameter
    assert at.toggle(key="prune_own_export").proto.query_param_key == ""
    assert at.slider(key="prune_own_keep").proto.query_param_key == "prune_own_keep"  # a setting stays in the link
