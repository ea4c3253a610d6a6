"""python -m corpus_heads in one process: the result folder holds what the app's own run computes, under the
app's shard names; a table's text column; bad input is one sentence and exit status 2."""
import io
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import corpus_stats
from corpus_heads.__main__ import read_sentences, run
from data import corpus
from experiments import corpus as ec
from experiments import corpus_results

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from bench import tiny_families

    return tiny_families.write("bert", tmp_path_factory.mktemp("m") / "bert")


def test_the_result_folder_is_the_apps_run(tiny_bert, tmp_path, one_thread):
    sentences = corpus.builtin(70).sentences
    (tmp_path / "c.txt").write_text("\n".join(sentences) + "\n")
    printed = io.StringIO()
    meta = run(["--model", f"hf:{tiny_bert}", "--data", str(tmp_path / "c.txt"), "--out", str(tmp_path / "out")],
               printed)
    assert meta["engine"] == "local" and meta["sentences"] == 70 and meta["shards"] == 2
    assert "local: 70 sentences × 8 heads" in printed.getvalue()
    opened = corpus_results.read(tmp_path / "out")
    assert opened.sentences == sentences and opened.meta["model"] == f"hf:{tiny_bert}"
    import models

    model = models.load(f"hf:{tiny_bert}")
    app = ec.run(model, sentences, folder=tmp_path / "app-cache")          # what the corpus view computes
    assert corpus_stats.max_abs_diff(opened.stats, app.stats) == 0.0
    names = {p.name for p in (tmp_path / "out" / "shards").glob("*.npz")}
    assert names == {p.name for p in (tmp_path / "app-cache").glob("*.npz")} and len(names) == 2
    assert corpus_results.find(tmp_path) == [tmp_path / "out"]


def test_a_tables_text_column_and_bad_input(tmp_path):
    (tmp_path / "t.csv").write_text('id,body\n1,"It rains. We stay in."\n2,The bank was closed.\n')
    assert read_sentences(tmp_path / "t.csv", "body") == ("It rains.", "We stay in.", "The bank was closed.")
    with pytest.raises(ValueError, match="no column 'text': pick one of id, body with --text-col"):
        read_sentences(tmp_path / "t.csv", "text")
    with pytest.raises(ValueError, match="Say which column holds the text with --text-col"):
        read_sentences(tmp_path / "t.csv")
    out = subprocess.run([sys.executable, "-m", "corpus_heads", "--model", "bert", "--data", str(tmp_path / "none.txt"),
                          "--out", str(tmp_path / "o")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.strip().startswith("Cannot read") and "Traceback" not in out.stderr
    with pytest.raises(ValueError, match="holds no result.npz"):
        corpus_results.read(tmp_path)
