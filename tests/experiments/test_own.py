"""Your model on your rows: importance against an independent gradient, the iterative plan, export and reload."""
import json

import numpy as np
import pytest
import torch

import limits
from data.labelled import read_table
from experiments import own
from experiments.importance import gradient_importance
from experiments.prune_plan import plan as make_plan
from models import task_head
from models.gates import gated, head_counts, mask


def _task(classifier, **settings):
    folder, data = classifier
    tm = task_head.load(str(folder))
    return own.prepare(tm, read_table(data, "rows.csv", 10**6), "text", "label", None, own.Settings(**settings))


def value_row_importance(model, batches, off=(), eps=1e-6) -> np.ndarray:
    """Independent of the gates: head h's output is linear in its value rows (weight and bias), so value rows times
    ξ act as a gate ξ; central differences at ξ = 1 (ξ = 0 for the heads in `off`), mean |.| over batches."""
    values = [layer.attention.self.value for layer in model.base_model.encoder.layer]
    hs = model.config.hidden_size // model.config.num_attention_heads
    original = [(v.weight.detach().clone(), v.bias.detach().clone()) for v in values]

    @torch.no_grad()
    def set_gate(layer: int, h: int, xi: float) -> None:
        rows = slice(h * hs, (h + 1) * hs)
        values[layer].weight[rows] = xi * original[layer][0][rows]
        values[layer].bias[rows] = xi * original[layer][1][rows]

    for layer, h in off:
        set_gate(layer, h, 0.0)
    out = np.zeros((len(values), model.config.num_attention_heads))
    for batch in batches:
        for layer in range(len(values)):
            for h in range(out.shape[1]):
                at = 0.0 if (layer, h) in off else 1.0
                loss = []
                for sign in (1, -1):
                    set_gate(layer, h, at + sign * eps)
                    with torch.no_grad():
                        loss.append(float(model(**batch).loss))
                set_gate(layer, h, at)
                out[layer, h] += abs(loss[0] - loss[1]) / (2 * eps) / len(batches)
    return out


def test_importance_equals_the_gradient_through_value_rows(classifier):
    task = _task(classifier)
    model = task_head.to_float64(task.tm.model)
    got = gradient_importance(model, task.loss, task.score, normalise=False)
    np.testing.assert_allclose(got, value_row_importance(task_head.to_float64(task.tm.model), task.score),
                               rtol=1e-5, atol=1e-9)
    at = gradient_importance(model, task.loss, task.score, normalise=False, at={0: [1], 1: [3]})
    np.testing.assert_allclose(at, value_row_importance(task_head.to_float64(task.tm.model), task.score,
                                                        off=[(0, 1), (1, 3)]), rtol=1e-5, atol=1e-9)


def test_iterative_plan_rescores_and_stops_at_the_threshold():
    """Re-scoring after L0 H0 goes makes L0 H1 the least important (one-pass would take L1 H0, which costs 0.4)."""
    calls = []

    def score(at: dict) -> np.ndarray:
        calls.append(at)
        return np.array([[1.0, 0.1 if at else 2.0], [3.0, 4.0]])

    def metric(plan: dict) -> float:
        off = {(layer, h) for layer, hs in plan.items() for h in hs}
        return 1 - 0.05 * len(off) - 0.4 * ((1, 0) in off)

    res = make_plan(score, metric, [2, 2], step=0.25, keep=0.8, seeds=2)
    assert res.sizes == [0, 1, 2, 3, 4] and res.iterative_plans[:3] == [{}, {0: [0]}, {0: [0, 1]}]
    assert res.iterative == pytest.approx([1, 0.95, 0.9, 0.45, 0.4])
    assert res.one_pass == pytest.approx([1, 0.95, 0.5, 0.45, 0.4])
    assert res.stop == 2 and res.recommended == "iterative" and res.plan == {0: [0, 1]} and res.value == 0.9
    assert calls == [{}, {0: [0]}, {0: [0, 1]}, {0: [0, 1], 1: [0]}]
    calls.clear()
    short = make_plan(score, metric, [2, 2], step=0.25, keep=0.8, seeds=2, full=False)
    assert short.sizes == [0, 1, 2, 3] and len(calls) == 3 and short.plan == res.plan


def test_export_reloads_with_the_same_class_and_predicts_as_gated(classifier, tmp_path, one_thread):
    import transformers

    task, plan = _task(classifier), {0: [1], 1: [0, 2]}
    check = own.export_and_check(task, plan, str(tmp_path))
    assert check["reload_ok"] and check["max_diff"] < 1e-9 and check["same"] == check["predictions"] == 40
    assert check["class"] == "PrunedBertForSequenceClassification"
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "pruned-bert" and config["pruned_heads"] == {"0": [1], "1": [0, 2]}
    assert ("AutoModelForSequenceClassification.from_pretrained(\"<this folder>\", trust_remote_code=True)"
            in (tmp_path / "README.md").read_text())
    again = transformers.AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()  # registered above
    assert head_counts(again) == [3, 2] and again.config.id2label == task.tm.model.config.id2label
    model = task.tm.model
    with torch.no_grad(), gated(model, mask(head_counts(model), plan)):
        for batch in task.held:
            inputs = {k: v for k, v in batch.items() if k != "labels"}
            torch.testing.assert_close(again(**inputs).logits, model(**inputs).logits, rtol=0, atol=1e-5)


def test_timing_and_savings_add_up(classifier):
    task = _task(classifier, batch=4, seq_len=16, repeats=3, warmup=1)
    t = own.prune_and_time(task, {0: [1], 1: [0, 1, 2, 3]}, own.Settings(batch=4, seq_len=16, repeats=3, warmup=1))
    assert t["full_ms"] > 0 and t["pruned_ms"] > 0 and (t["batch"], t["seq_len"]) == (4, 16)
    assert [(r["heads"], r["kept"]) for r in t["layers"]] == [(4, 3), (4, 0)]
    assert t["params_full"] - t["params_pruned"] == sum(r["params_saved"] for r in t["layers"]) > 0
    assert t["bytes_full"] - t["bytes_pruned"] == 4 * (t["params_full"] - t["params_pruned"])


def test_hosted_budget_refuses_with_one_sentence(classifier, monkeypatch):
    from data import reviews

    rows = "text,label\n" + "".join(f"{r['text']},{r['label']}\n" for r in reviews.rows(200, seed=3))
    task = _task((classifier[0], rows.encode()))
    s = own.Settings(step=0.05, seeds=6)  # 8 heads: 8 scorings of 100 rows, 65 metric runs on 100 others
    assert own.check_budget(task, s) == own.cost(task, s) == 3 * 100 * 8 + 100 * 65 + 2 * 9 * 16 + 2 * 100
    monkeypatch.setenv(limits.ENV, "1")
    with pytest.raises(ValueError, match=r"needs up to 9,388 .* one request here may use 6,000: use fewer") as err:
        own.check_budget(task, s)
    assert "\n" not in str(err.value)


def test_a_folder_without_a_head_or_with_missing_head_weights_is_refused(classifier, tmp_path):
    from safetensors.torch import load_file, save_file
    from transformers import BertModel

    folder, _ = classifier
    with pytest.raises(ValueError, match="no task head to judge heads by .its config names BertModel"):
        task_head.head_of(["BertModel"])
    model = BertModel.from_pretrained(folder)
    model.save_pretrained(tmp_path / "base")
    with pytest.raises(ValueError, match="no task head"):
        task_head.load(str(tmp_path / "base"))
    state = load_file(folder / "model.safetensors")
    (tmp_path / "headless").mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / "headless" / name).write_bytes((folder / name).read_bytes())
    save_file({k: v for k, v in state.items() if not k.startswith("classifier")},
              str(tmp_path / "headless" / "model.safetensors"))
    with pytest.raises(ValueError, match="The weights do not hold the head of BertForSequenceClassification"):
        task_head.load(str(tmp_path / "headless"))


def test_a_pruned_export_prunes_again_in_the_original_numbering(classifier, tmp_path):
    from models.prune import compose

    assert compose({0: [1]}, {0: [1], 1: [0]}, 4) == {0: [1, 2], 1: [0]}
    assert compose({1: [0, 1, 2, 3]}, {1: [0]}, 4) == {1: [0, 1, 2, 3]}  # the silent head left no head to take
    first = _task(classifier)
    assert own.export_and_check(first, {0: [1]}, str(tmp_path / "once"))["reload_ok"]
    again = own.prepare(task_head.load(str(tmp_path / "once")), read_table(classifier[1], "rows.csv", 10**6),
                        "text", "label", None, own.Settings())
    assert head_counts(again.tm.model) == [3, 4] and again.tm.pruned_heads == {"0": [1]}
    assert own.export_and_check(again, {0: [1], 1: [2]}, str(tmp_path / "twice"))["reload_ok"]
    config = json.loads((tmp_path / "twice" / "config.json").read_text())
    assert config["pruned_heads"] == {"0": [1, 2], "1": [2]}  # heads 0, 2, 3 were left; its head 1 was head 2


def test_a_full_model_no_better_than_chance_is_said_before_its_plan(classifier):
    """The fine-tuned classifier beats chance on its rows: nothing said. Held to a chance it does not beat (as a model
    judged on rows labelled for another task is), the sentence names both numbers; lower-is-better too."""
    import dataclasses

    task = _task(classifier)
    base = task.metric({})
    assert base > task.chance and task.below_chance(base) is None
    worse = dataclasses.replace(task, chance=min(1.0, base + 0.1))
    said = worse.below_chance(base)
    assert said.startswith(f"The full model's accuracy on your held-out rows, {base:.1%}, is no better than chance")
    perplexity = dataclasses.replace(task, metric_name="perplexity", higher_better=False, chance=3.0)
    assert perplexity.below_chance(2.0) is None and "no better than chance (3" in perplexity.below_chance(4.0)


def test_tokens_per_row_are_offered_only_up_to_the_positions_the_model_embeds(classifier):
    task = _task(classifier)
    assert task.tm.model.config.max_position_embeddings == 64  # the shipped classifier
    assert own.token_choices(task.tm, [32, 64, 128, 256, 512]) == [32, 64]
    assert own.token_choices(task.tm, [16, 32, 64, 128], most=32) == [16, 32]
    assert own.token_choices(task.tm, [128, 256]) == [64]  # none fits: what the model embeds


def test_a_language_model_no_better_than_chance_is_told_about_its_text_not_labels(tmp_path):
    """A causal LM's rows hold no labels (the text is its own target): its sentence asked to check "the rows' labels".
    A tiny random Llama predicts its rows no better than a guess."""
    from bench.tiny_any import save

    tm = task_head.load(save("llama", "causal", tmp_path))
    rows = "text\n" + "\n".join(f"the cat sat on mat {i}" for i in range(40))
    task = own.prepare(tm, read_table(rows.encode(), "rows.csv", 10**6), "text", None, None, own.Settings())
    said = task.below_chance(task.chance * 2) if not task.higher_better else task.below_chance(0.0)
    assert "check that the rows are text of the kind this model learned" in said and "labels" not in said
