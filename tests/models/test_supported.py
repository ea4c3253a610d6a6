"""models.supported(): a row per architecture, its kind, how its attention is read, and each view's "yes" or the
sentence that view says, read from the same code that refuses."""
import pytest

import models
from models.hf.families import SUPPORTED

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

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
    bypassing = ["falcon", "gptj", "bloom", "mpt", "codegen", "gpt_neo", "xglm", "gpt_neox_japanese"]
    assert table.loc[bypassing, "next_token"].eq("yes").all()
    assert "computes its own" in table.loc["cpmant", "next_token"]
    post_norm = table.loc[["openai-gpt", "trocr", "xlnet", "bert-generation"], "next_token"]
    assert post_norm.str.contains("after every attention and MLP (post-norm", regex=False).all()
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


# (model_type, tiny model kind, extra config): tiny models (bench.tiny_any: head_dim 8) whose config agrees with the
# architecture's default on what Inside a head reads: Gemma 2's and Gemma 3's query_pre_attn_scalar set to the tiny
# head_dim, as it is to the default's (256), so that only the score cap (Gemma 2's, 50 by default) is left to decide;
# GPT-SW3 is GPT-2's config under another name (a loaded one says model_type "gpt2"), so its heads are GPT-2's
SAME_RULE = [("llama", "causal", {}), ("gemma", "causal", {}), ("gemma2", "causal", {"query_pre_attn_scalar": 8}),
             ("gemma3_text", "causal", {"query_pre_attn_scalar": 8}), ("falcon", "causal", {}), ("gpt2", "causal", {}),
             ("gpt-sw3", "causal", {}), ("bert", "masked", {}), ("xlm-roberta", "masked", {}),
             ("deberta-v2", "masked", {})]


def _opens(model) -> str | None:
    """What Inside a head does with head 1 of layer 0: None where it shows the head, else the sentence it says."""
    from limits.errors import UserError

    try:
        model.head_qkv("The cat sat on the mat", 0, 1)
    except UserError as err:
        return str(err)
    return None


@pytest.fixture(scope="module")
def table():
    return models.supported()


@pytest.mark.parametrize(("model_type", "kind", "extra"), SAME_RULE)
def test_the_inside_head_column_is_what_the_view_says_for_a_loaded_model(model_type, kind, extra, table, tmp_path):
    """One rule (models.internals.inside_head_says): the column says "yes" exactly where inside_head_refusal(model)
    is None for a tiny model of the architecture, its sentence otherwise, and the view itself does the same."""
    from bench.tiny_any import save
    from models.internals import inside_head_refusal

    model = models.load("hf:" + save(model_type, kind, tmp_path / "m", **extra))
    said = inside_head_refusal(model)
    assert table.loc[model_type, "inside_head"] == (said or "yes"), (model_type, said)
    assert _opens(model) == said
    assert (said is None) == (model_type not in ("gemma2", "falcon", "deberta-v2")), (model_type, said)


@pytest.mark.parametrize("model_type", ["xglm", "gpt_neox_japanese", "openai-gpt", "trocr", "falcon", "cpmant"])
def test_the_next_token_column_is_what_the_view_says_for_a_loaded_model(model_type, table, tmp_path):
    """One rule (models.residual.why_not): the column says "yes" exactly where a tiny causal LM of the architecture
    is split, and the sentence its split refuses with otherwise (GPT-1's and TrOCR's post-norm, decided from the
    config)."""
    from bench.tiny_any import save
    from experiments.logit_lens import decompose
    from limits.errors import UserError

    model = models.load("hf:" + save(model_type, "causal", tmp_path / "m"))
    try:
        d = decompose(model, "The cat sat on")
    except UserError as err:
        said = str(err)
    else:
        said = "yes"
        assert abs(d.total - d.logit) < 1e-4
    assert table.loc[model_type, "next_token"] == said


def test_the_inside_head_column_is_the_default_configs_and_a_scale_of_its_own_opens(table, tmp_path):
    """The column is decided on the architecture's default config: a Gemma 3's scores are scaled by
    query_pre_attn_scalar^-1/2, plain 1/√d_k in the default config (256 both), so the column says "yes"; a Gemma 3
    whose scalar is not its head_dim (the tiny one's 256 against 8, as Gemma 3 27B's 168 against 128) opens too, its
    scale step multiplying by its own 0.0625, and the steps' softmax is the model's own weights."""
    from transformers import CONFIG_MAPPING

    from analysis.inside_head import checks, scale_label, step_notes, steps
    from bench.tiny_any import save
    from models.internals import inside_head_refusal, inside_head_says

    default = CONFIG_MAPPING["gemma3_text"]()
    assert default.query_pre_attn_scalar == default.head_dim and not default.attn_logit_softcapping
    assert table.loc["gemma3_text", "inside_head"] == "yes" == (inside_head_says(default, "decoder", True) or "yes")
    model = models.load("hf:" + save("gemma3_text", "causal", tmp_path / "m"))
    assert (model.config.query_pre_attn_scalar, model.config.head_dim) == (256, 8)
    assert inside_head_refusal(model) is None is _opens(model)
    head = model.head_qkv("The cat sat on the mat", 0, 1)
    assert head.scale == 0.0625                                                # 256^-1/2, not 8^-1/2
    result = steps(head.x, head.q, head.k, head.v, head.scale, head.causal, head.window)
    assert checks(head, result)["model"] < 1e-5 and checks(head, result)["sdpa"] < 1e-5
    assert "scales its scores by its own factor, 0.0625, not by 1/√d_k = 0.3536" in step_notes(head)[0]
    assert scale_label(head.scale, 8) == "× 0.0625" and scale_label(True, 8) == "÷√d_k"   # the neuron view's title
    # Gemma 2's default caps its scores: the column says the cap, which no scale of its own would open
    assert table.loc["gemma2", "inside_head"] == ("gemma2 caps its attention scores (50 · tanh(score / 50)), which "
                                                  "this view's steps do not show yet.")
