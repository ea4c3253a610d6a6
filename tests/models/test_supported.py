"""models.supported(): a row per architecture, its kind, how its attention is read, and each view's "yes" or the
sentence that view says, read from the same code that refuses."""
import models
from models.hf.common import SUPPORTED

VIEWS = {"heads": "Heads (every view reading attention)", "inside_head": "Inside a head",
         "next_token": "Next token"}
KINDS = ("encoder", "decoder", "encoder-decoder", "vision")
MARKERS = ("<!-- supported: tests/models/test_supported.py writes this table from models.supported() and prints "
           "it when it differs -->",
           "<!-- supported: end -->")


def markdown(table) -> str:
    """README's family table from models.supported() (a documentation writer, kept beside the test that checks
    README against it; the app never draws it): per kind, how many architectures and each view's "yes" ones (named
    where few, counted where many), then every architecture by kind in a folded list; between MARKERS."""
    def cell(rows, column):
        yes = sorted(rows.index[rows[column] == "yes"])
        if len(yes) == len(rows):
            return f"all {len(yes)}"
        return "none" if not yes else ", ".join(yes) if len(yes) <= 8 else str(len(yes))

    lines = [MARKERS[0], "", "| kind | architectures | " + " | ".join(VIEWS.values()) + " |",
             "|---" * (2 + len(VIEWS)) + "|"]
    for kind in KINDS:
        rows = table[table.kind == kind]
        lines.append(f"| {kind} | {len(rows)} | " + " | ".join(cell(rows, c) for c in VIEWS) + " |")
    lines += ["", f"<details><summary>All {len(table)} architectures (transformers' model_type)</summary>", ""]
    lines += [f"- **{kind}**: {', '.join(sorted(table.index[table.kind == kind]))}" for kind in KINDS]
    lines += ["", "</details>", "", MARKERS[1]]
    return "\n".join(lines)


def test_a_row_per_architecture_with_kind_and_each_views_answer():
    table = models.supported()
    assert table.index.is_unique and {"kind", "attention", "heads", "inside_head", "next_token"} <= set(table.columns)
    refused_before = ["opt", "phi3", "gemma", "gemma2", "qwen3", "falcon", "gptj", "bloom", "xlm-roberta", "mbart",
                      "pegasus"]
    assert (table.loc[refused_before, "heads"] == "yes").all()
    assert table.loc["mbart", "kind"] == "encoder-decoder" and table.loc["xlm-roberta", "kind"] == "encoder"
    assert table.loc["opt", "attention"] == "capture" and table.loc["falcon", "attention"] == "output_attentions"
    assert table.loc["llama", "inside_head"] == "yes" and table.loc["llama", "next_token"] == "yes"
    assert table.loc["opt", "next_token"] == "yes" and table.loc["opt", "inside_head"] == "yes"
    assert "caps its attention scores" in table.loc["gemma2", "inside_head"]
    assert "falcon lays its heads" in table.loc["falcon", "inside_head"]
    assert table.loc[["gemma2", "olmo2", "cohere", "granite"], "next_token"].eq("yes").all()  # sandwich, scales, cap
    assert table.loc[["falcon", "gptj", "bloom", "mpt", "codegen", "gpt_neo"], "next_token"].eq("yes").all()  # bypass
    assert "computes its own" in table.loc["xglm", "next_token"]
    assert table.loc["bert", "next_token"].startswith("This view follows a decoder-only language model")
    assert {"vit", "deit"} <= set(table.index) and "wav2vec2" not in table.index  # speech is not read as text
    assert len(table) > 100 and "text encoders" in SUPPORTED


def test_readme_holds_the_table_generated_from_supported():
    """README's family table is markdown(models.supported()): when an architecture or a view changes, this test
    fails and prints the new table to paste between the markers."""
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    start, end = readme.index(MARKERS[0]), readme.index(MARKERS[1]) + len(MARKERS[1])
    wanted = markdown(models.supported())
    assert readme[start:end] == wanted, "README's table should read:\n" + wanted


def test_an_architecture_without_attention_weights_is_not_offered(tmp_path):
    """Mamba (a state-space model) computes no attention: it is not a row, and loading one says so in one
    sentence, where the table said every decoder's heads could be shown."""
    import pytest
    from transformers import MambaConfig

    assert "mamba" not in models.supported().index and "llama" in models.supported().index
    MambaConfig(num_hidden_layers=1, hidden_size=16, vocab_size=32).save_pretrained(tmp_path / "mamba")
    with pytest.raises(ValueError, match="is a model of type mamba, which this app does not show"):
        models.load(f"hf:{tmp_path / 'mamba'}")
