"""AppTest: the corpus view opens a result folder of python -m corpus_heads (found, or typed) without running the
model over the corpus; a folder of another model asks for that model; a bad folder is one sentence."""
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from analysis import corpus_stats
from corpus_heads.__main__ import run
from data import corpus
from experiments import corpus_results

PAGE = "views/corpus.py"


def app(**state) -> AppTest:
    at = AppTest.from_file("../../app.py", default_timeout=300)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(PAGE)
    return at.run()


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    """(the tiny BERT's folder, a result folder of 70 built-in sentences written by the command)."""
    from bench import tiny_families

    root = tmp_path_factory.mktemp("results")
    model = tiny_families.write("bert", root / "model")
    (root / "c.txt").write_text("\n".join(corpus.builtin(70).sentences) + "\n")
    run(["--model", f"hf:{model}", "--data", str(root / "c.txt"), "--out", str(root / "found" / "docs70")])
    return model, root / "found" / "docs70"


def test_a_typed_folder_opens_with_its_statistics(result):
    model, folder = result
    at = app(model="hf:", hf_spec=str(model), corpus_source="Result folder", corpus_result=str(folder))
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.get("progress") == []                     # nothing computed: the folder's statistics are shown
    table = at.dataframe[0].value
    means = corpus_stats.means(corpus_results.read(folder).stats)
    assert len(table) == 8 and np.isclose(table["prev"][3], means[0, 3, 0])  # L0 H3's previous-token share
    assert any("70 sentences" in c.value for c in at.caption)


def test_found_folders_and_another_models_folder(result, monkeypatch):
    model, folder = result
    monkeypatch.setenv("ATTENTION_EXPLORER_RESULTS", str(folder.parent))
    at = app(corpus_source="Result folder")            # the sidebar's default model: bert, not the folder's
    assert at.selectbox(key="corpus_found").value == folder and not at.exception
    assert "computed with hf:" in at.warning[0].value and not at.dataframe
    at.button(key="corpus_result_model").click().run()  # switches the sidebar to the folder's model
    assert not at.exception and at.sidebar.selectbox(key="model").value == "hf:" and len(at.dataframe[0].value) == 8


def test_a_folder_that_is_not_a_result(tmp_path):
    at = app(corpus_source="Result folder", corpus_result=str(tmp_path))
    assert not at.exception and "holds no result.npz" in at.error[0].value
