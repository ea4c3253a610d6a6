"""AppTest of the precision view's task check with the model's own head: a classifier trained here is checked with
its classifier on the held-out rows of the Pruning view's upload (not on the paraphrase task its head was dropped
for), and the page says so until rows are uploaded."""
import pytest
from streamlit.testing.v1 import AppTest

from data.labelled import read_table
from experiments import own
from models import task_head


def _texts(at: AppTest) -> str:
    return " ".join(str(e.value) for e in [*at.caption, *at.markdown, *at.info, *at.error, *at.warning])


@pytest.mark.slow
def test_a_classifier_is_checked_with_its_own_head_on_the_uploaded_rows(classifier, one_thread):
    folder, data = classifier
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = str(folder)
    at.session_state["text"] = "a fine film"
    at.session_state["quant_variants"] = ["int8_dynamic", "int8_ao"]
    at.run()
    at.switch_page("views/precision.py").run()
    assert not at.exception, at.exception
    said = _texts(at)
    assert "own sequence classification head (BertForSequenceClassification)" in said and "Pruning view" in said
    assert "quant_measure" not in [t.key for t in at.toggle]  # no paraphrase task in its place

    at.switch_page("views/pruning.py").run()
    at.radio(key="prune_source").set_value("your model on your labelled rows").run()
    at.file_uploader[0].upload("rows.csv", data, "text/csv").run()
    assert not at.exception, at.exception
    at.switch_page("views/precision.py").run()
    assert not at.exception, at.exception
    toggle = at.toggle(key="quant_measure")
    assert "Accuracy" not in toggle.label and "accuracy" in toggle.label and "40 held-out rows of your upload" in \
        toggle.label
    at.slider(key="quant_runs").set_value(1)
    toggle.set_value(True).run()
    assert not at.exception and not at.error, at.exception
    table = at.dataframe[0].value.set_index("variant")
    # the reference path: the Pruning lab's own task, measured with every head on
    tm = task_head.load(str(folder))
    task = own.prepare(tm, read_table(data, "rows.csv", 10**6), "text", "label", None, own.Settings())
    assert table.loc["fp32", "Accuracy"] == round(task.measure({})["accuracy"], 4)
    assert table.loc["fp32", "top-1 agreement"] == 1.0
    for row in ("int8 dynamic (per channel)", "int8 torch.ao (fastest)"):
        assert table.loc[row, "top-1 agreement"] >= 0.9 and table.loc[row, "cosine"] > 0.95
