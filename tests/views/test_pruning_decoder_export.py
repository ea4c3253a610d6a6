"""AppTest: the pruning lab offers real pruning and the portable export for a Llama-style decoder (GQA), says which
key/value groups a plan leaves partly used, and prints the lines that load the export without this project; an
encoder-decoder is told why it is not offered; a pruned BERT export loaded back gets the lab too."""
import re

import pytest

from experiments.prune_tasks import ENC_DEC
from tests.views.view_at import open_view


@pytest.mark.slow  # scoring, the metric, timing and the export through AppTest: ~30 s on 2 busy cores
def test_a_gqa_decoder_is_pruned_for_real_and_exported(tiny_folder, one_thread):
    at = open_view("pruning", model="hf:", hf_spec=tiny_folder("llama"), text="The river bank.", prune_score=4,
                   prune_eval=4)
    assert not at.error, [e.value for e in at.error]
    assert at.metric[0].label == "Next-token accuracy"
    at.multiselect(key="prune_off").set_value(["L1 H3"]).run()  # 4 query heads share 2 key/value heads
    assert not at.exception, at.exception
    said = " ".join(c.value for c in at.caption)
    assert "Key/value groups partly removed: L1: group 1 (H2–H3). 2 query heads share each key/value head" in said

    at.slider(key="prune_pct").set_value(10).run()   # round(10 % of 8) = 1 head: its group of 2 is left partly used
    assert not at.exception, at.exception
    assert len(at.info) == 1 and ("go only with all its query heads, so these groups keep their keys and values."
                                  in at.info[0].value)
    at.toggle(key="prune_real").set_value(True).run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    # one query head of a group of 2: it stays as a silent head, so the copy is no smaller: nothing timed or exported
    assert "stay in the model as silent heads" in at.info[1].value and not at.dataframe
    assert len(at.get("download_button")) == 1  # the plan as JSON alone
    at.slider(key="prune_pct").set_value(50).run()  # whole groups go: their query heads, keys and values
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    cut = next(c.value for c in at.caption if c.value.startswith("Cut "))
    full, pruned = (int(n.replace(",", "")) for n in re.findall(r"([\d,]+) parameters → ([\d,]+)", cut)[0])
    assert cut.startswith("Cut 3 heads (1 more of the plan stays as a silent head: its key/value group keeps other "
                          "heads): ") and pruned < full
    assert list(at.dataframe[0].value["batch"]) == [1, 16]
    gap = next(c.value for c in at.caption if "Pruned vs gated" in c.value)
    assert float(gap.split("difference ")[1].rstrip(".")) < 1e-5
    code = next(c.value for c in at.code if "from_pretrained" in c.value)
    assert "transformers.AutoModelForCausalLM.from_pretrained(OUT, trust_remote_code=True)" in code
    assert 'transformers.pipeline("text-generation", model=OUT, trust_remote_code=True)' in code
    assert len(at.get("download_button")) == 2  # the plan as JSON and the pruned model


def test_an_encoder_decoder_is_told_why_there_is_no_export(tiny_folder, one_thread):
    at = open_view("pruning", model="hf:", hf_spec=tiny_folder("t5"), text="The train leaves at seven.",
                   prune_score=8, prune_eval=10)
    assert not at.error, [e.value for e in at.error]
    assert ENC_DEC in [c.value for c in at.caption] and "T5, BART" in ENC_DEC
    assert not any(t.key == "prune_real" for t in at.toggle)


@pytest.mark.slow  # the export, then scoring and the metric through AppTest: ~18 s on 2 busy cores
def test_a_padded_export_offers_only_its_real_heads(tiny_folder, tmp_path, one_thread):
    """An export whose layer 0 lost H1 (group 0 padded with a silent head at position 1) in the sidebar: the page
    offers and counts 3 + 4 heads, never the silent one, and re-pruning writes the plan in the original numbering."""
    from models import load
    from models.prune import pruned_copy
    from models.pruned_hf import export

    m = load(f"hf:{tiny_folder('llama')}")
    export(pruned_copy(m.model, {0: [1]}), {0: [1]}, str(tmp_path / "out"), m.tokenizer)
    at = open_view("pruning", model="hf:", hf_spec=str(tmp_path / "out"), text="The river bank.", prune_score=4,
                   prune_eval=4)
    assert not at.error and not at.exception, at.exception or [e.value for e in at.error]
    assert at.multiselect(key="prune_off").options == ["L0 H0", "L0 H2", "L0 H3", "L1 H0", "L1 H1", "L1 H2", "L1 H3"]
    at.multiselect(key="prune_off").set_value(["L0 H2"]).run()
    assert not at.exception, at.exception
    said = [c.value for c in at.caption]
    assert at.multiselect(key="prune_off").value == ["L0 H2"]  # one of the 7 heads off
    # the note reads the plan in the original numbering with the export's own cut: H1 (earlier) and H2 (now) gone
    assert any(c.startswith("Key/value groups partly removed: L0: group 0 (H0–H1), group 1 (H2–H3).") for c in said)


@pytest.mark.slow  # the export, then scoring and the metric through AppTest: ~15 s on 2 busy cores
def test_an_export_loaded_back_names_its_heads_as_the_original_model_did(tiny_folder, tmp_path, one_thread):
    """A GPT-2 export that lost L0 H0 and H1 holds L0's H2 and H3 at positions 0 and 1: the page names, draws and
    switches off the original heads, those the model's own trace (the Heads view) has, and gates the right one."""
    import json

    from experiments import prune_tasks
    from models import load
    from models.prune import pruned_copy
    from models.pruned_hf import export

    m = load(f"hf:{tiny_folder('gpt2')}")
    export(pruned_copy(m.model, {0: [0, 1]}), {0: [0, 1]}, str(tmp_path / "out"), m.tokenizer)
    e = load(f"hf:{tmp_path / 'out'}")
    weights = e.attend("The river bank.").weights                     # (L, H, T, T): original heads, cut ones blank
    has = [f"L{l} H{h}" for l in range(weights.shape[0]) for h in range(weights.shape[1]) if weights[l, h].any()]
    at = open_view("pruning", model="hf:", hf_spec=str(tmp_path / "out"), text="The river bank.", prune_score=4,
                   prune_eval=4)
    assert not at.error and not at.exception, at.exception or [x.value for x in at.error]
    assert at.multiselect(key="prune_off").options == has == ["L0 H2", "L0 H3", "L1 H0", "L1 H1", "L1 H2", "L1 H3"]
    grid = next(json.loads(c.proto.spec)["data"][0] for c in at.get("plotly_chart"))
    shown = {h.split("<br>")[0]: h.split("<br>")[1] for h in grid["hovertext"]}
    task = prune_tasks.for_model(e, "The river bank.", f"hf:{tmp_path / 'out'}")
    grad = task.score(4, None)[0]                                     # by position: L0's H2 and H3 at 0 and 1
    assert list(shown) == has and shown["L0 H3"].endswith(f" {grad[0, 1]:.3f}") and grad[0, 0] != grad[0, 1]
    at.multiselect(key="prune_off").set_value(["L0 H3"]).run()
    assert not at.exception, at.exception
    assert at.multiselect(key="prune_off").value == ["L0 H3"] and len(at.multiselect(key="prune_off").options) == 6
    assert at.metric[0].value == f"{task.metric(4)({0: [1]}):.1%}"    # position 1 gated: the original H3


@pytest.mark.slow  # the export, then scoring and the metric through AppTest: ~15 s on 2 busy cores
def test_a_pruned_bert_export_loaded_back_is_offered_the_lab(tiny_folder, tmp_path, one_thread):
    """A BERT export (model_type "pruned-bert") is a BERT-layout encoder: the lab scores its remaining heads by their
    original numbers, as it does a decoder's, instead of saying the model has no task here."""
    from models import load
    from models.prune import pruned_copy
    from models.pruned_hf import export

    m = load(f"hf:{tiny_folder('bert')}")
    export(pruned_copy(m.model, {0: [0]}), {0: [0]}, str(tmp_path / "out"), m.tokenizer)
    at = open_view("pruning", model="hf:", hf_spec=str(tmp_path / "out"), text="The river [MASK] was wide.",
                   prune_score=8, prune_eval=10)
    assert not at.error and not at.exception, at.exception or [x.value for x in at.error]
    assert not any("has none" in i.value for i in at.info)
    names = at.multiselect(key="prune_off").options
    assert "L0 H0" not in names and "L0 H1" in names and "L1 H0" in names
    at.multiselect(key="prune_off").set_value(["L0 H1"]).run()
    assert not at.exception, at.exception
    assert at.multiselect(key="prune_off").value == ["L0 H1"] and at.multiselect(key="prune_off").options == names
