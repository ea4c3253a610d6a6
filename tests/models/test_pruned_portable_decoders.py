"""Pruned GPT-2 and Llama-style (GQA) decoders: pruned == gated here, and the export loads where the project is not.

A fresh process whose path holds only the folders and transformers builds each export with trust_remote_code
(AutoModelForCausalLM and the text-generation pipeline); its logits and greedy tokens equal the model gated here
(gate 0 on the removed heads), and the stock class refuses the folder instead of re-initialising its attention.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import transformers

from models import load
from models.gates import gated, head_counts, mask
from models.prune import pruned_copy
from models.pruned_hf import export
from models.pruned_modeling import kv_layout, layout_size, partial_groups

pytestmark = pytest.mark.usefixtures("one_thread_per_module")

# family -> (stock class, plan on 2 layers × 4 heads; the Llama-style ones share 2 key/value heads)
PLANS = {
    "gpt2": ("GPT2LMHeadModel", {0: [1, 3], 1: [0, 1, 2, 3]}),   # a layer loses every head: one silent head stays
    "llama": ("LlamaForCausalLM", {0: [1], 1: [2, 3]}),          # groups keep 1 and 2 heads; a whole group goes
    "qwen2": ("Qwen2ForCausalLM", {0: [0, 1, 2, 3], 1: [0, 2]}),  # q/k/v biases; groups keep 1 head each
    "mistral": ("MistralForCausalLM", {0: [3], 1: [0, 1]}),
}
PROMPTS = ["The river bank", "abc xyz 123 !"]

OUTSIDE = textwrap.dedent("""
    import json, sys
    import torch, transformers
    assert not any(m == "models" or m.startswith("models.") for m in sys.modules), "the project was imported"
    out = {}
    for spec in sys.argv[1:]:
        folder, stock, ids = spec.split("|")
        ids = torch.tensor(json.loads(ids))
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
        with torch.no_grad():
            logits = model(input_ids=ids).logits
            written = model.generate(ids[:1], attention_mask=torch.ones_like(ids[:1]), max_new_tokens=6,
                                     do_sample=False)
        tok = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
        pipe = transformers.pipeline("text-generation", model=folder, trust_remote_code=True)
        text = pipe(tok.decode(ids[0], skip_special_tokens=True), max_new_tokens=6, do_sample=False)
        try:
            getattr(transformers, stock).from_pretrained(folder)
            refused = "loaded"
        except OSError as err:
            refused = "refused: " + str(err).splitlines()[0]
        layers = model.base_model.h if hasattr(model.base_model, "h") else model.base_model.layers
        q = [(l.attn.c_proj.weight.shape[0] if hasattr(l, "attn") else l.self_attn.o_proj.in_features) for l in layers]
        out[folder] = {"class": type(model).__name__, "logits": logits.tolist(), "written": written[0].tolist(),
                       "pipeline": text[0]["generated_text"], "stock": refused, "attn_width": q}
    print(json.dumps(out))
""")


def _ids(tok, n: int = 10) -> torch.Tensor:
    """The prompts cut to one length (these tokenizers have no padding token): (2, n)."""
    return torch.tensor([x[:n] for x in tok(PROMPTS)["input_ids"]])


def _positions(family: str, plan: dict) -> list[int]:
    """Query positions per layer after the plan (4 heads; the Llama-style ones in 2 groups: kv_layout's layout)."""
    if family == "gpt2":
        return [max(4 - len(plan.get(i, [])), 1) for i in range(2)]
    return [len(kv_layout(plan.get(i, []), [0, 0, 1, 1])[0]) for i in range(2)]


def _gated(m, plan: dict, ids: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """Logits (B, T, V) and 6 greedy tokens after ids[0] of the model gated here with the plan's heads at 0."""
    net = m.model
    with torch.no_grad(), gated(net, mask(head_counts(net), plan)):
        return net(input_ids=ids).logits, net.generate(ids[:1], attention_mask=torch.ones_like(ids[:1]),
                                                      max_new_tokens=6, do_sample=False)[0].tolist()


def test_kv_layout_keeps_a_group_while_any_of_its_query_heads_stays():
    gqa = [0, 0, 1, 1]                                               # 4 query heads, 2 key/value groups
    assert kv_layout([0, 1], gqa) == ([2, 3], [1], 2)               # group 0 gone whole, group 1 intact
    assert kv_layout([0], gqa) == ([1, -1, 2, 3], [0, 1], 2)        # unequal groups: a silent head pads group 0
    assert kv_layout([0, 2], gqa) == ([1, 3], [0, 1], 1)            # one query head left in each group
    assert kv_layout([0, 1, 2, 3], gqa) == ([-1], [0], 1)           # all gone: one silent head
    assert kv_layout([1, 3], [0, 1, 2, 3]) == ([0, 2], [0, 2], 1)   # no sharing (GPT-2 style)
    three = [h // 4 for h in range(12)]                              # groups keep 1, 1, 4: copies are smaller
    assert kv_layout([0, 1, 2, 4, 5, 6], three) == ([3, 7, 8, 9, 10, 11], [0, 1, 2, 2, 2, 2], 1)
    assert layout_size([3, 7, 8, 9, 10, 11], [0, 1, 2, 2, 2, 2]) == 24 < layout_size([3, -1, -1, -1, 7] + [-1] * 3
                                                                                      + [8, 9, 10, 11], [0, 1, 2])
    assert partial_groups({0: [0, 2, 3], 1: [2, 3]}, 4, 2) == {0: [0]}
    assert partial_groups({0: [1]}, 4, 4) == {}


def test_one_head_of_llama_2_7b_layer_is_padded_never_larger_than_unpruned():
    """32 query heads sharing 8 key/value heads lose H0: group 0 keeps 3 and gets one silent head, so the layer keeps
    32 query and 8 key/value heads (per-head copies would be 31 and 31: 55 % more parameters); in a real Llama of
    that shape its attention has no more parameters than unpruned, 8 k/v heads, and equals the gated model."""
    group_of = [h // 4 for h in range(32)]
    head_of, kv, groups = kv_layout([0], group_of)
    assert head_of == [1, 2, 3, -1, *range(4, 32)] and kv == list(range(8)) and groups == 4
    assert layout_size(head_of, kv) == layout_size(range(32), range(8)) < layout_size(range(31), range(31))
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=32, hidden_size=64, num_attention_heads=32, num_key_value_heads=8,
                                      head_dim=4, intermediate_size=32, num_hidden_layers=1,
                                      attn_implementation="eager")
    full = transformers.LlamaForCausalLM(config).eval()
    pruned = pruned_copy(full, {0: [0]})
    attn = pruned.model.layers[0].self_attn
    size = lambda m: sum(p.numel() for p in m.model.layers[0].self_attn.parameters())  # noqa: E731
    assert size(pruned) == size(full) and attn.k_proj.out_features == 8 * 4 and attn.num_key_value_groups == 4
    ids = torch.randint(0, 32, (2, 7))
    with torch.no_grad(), gated(full, mask(head_counts(full), {0: [0]})):
        want = full(input_ids=ids).logits
    with torch.no_grad():
        torch.testing.assert_close(pruned(input_ids=ids).logits, want, rtol=0, atol=1e-5)


def test_per_head_copies_where_they_are_smaller_equal_the_gated_model():
    """12 query heads, 3 key/value groups keeping 1, 1 and 4 heads: copies (6 + 6) beat padding (12 + 3)."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=32, hidden_size=48, num_attention_heads=12, num_key_value_heads=3,
                                      head_dim=4, intermediate_size=32, num_hidden_layers=1,
                                      attn_implementation="eager")
    full = transformers.LlamaForCausalLM(config).eval()
    plan = {0: [0, 1, 2, 4, 5, 6]}
    pruned = pruned_copy(full, plan)
    attn = pruned.model.layers[0].self_attn
    assert attn.head_of == [3, 7, 8, 9, 10, 11] and attn.k_proj.out_features == 6 * 4 and attn.num_key_value_groups == 1
    ids = torch.randint(0, 32, (2, 7))
    with torch.no_grad(), gated(full, mask(head_counts(full), plan)):
        want = full(input_ids=ids).logits
    with torch.no_grad():
        torch.testing.assert_close(pruned(input_ids=ids).logits, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_padded_groups_equal_the_gated_model(family, tiny_folder):
    """8 query heads in 2 groups of 4: layer 0 keeps 3 + 4 (one silent head), layer 1 keeps 1 + 2 (groups of 2,
    one silent head); Qwen2's q/k/v biases travel with their rows."""
    m = load(f"hf:{tiny_folder(family, heads=8)}")
    plan = {0: [2], 1: [0, 1, 2, 5, 6]}
    ids = _ids(m.tokenizer)
    want, written = _gated(m, plan, ids)
    pruned = pruned_copy(m.model, plan)
    attns = [layer.self_attn for layer in pruned.model.layers]
    assert [a.head_of for a in attns] == [[0, 1, 3, -1, 4, 5, 6, 7], [3, -1, 4, 7]]
    assert [a.k_proj.out_features // 4 for a in attns] == [2, 2] and [a.num_key_value_groups for a in attns] == [4, 2]
    with torch.no_grad():
        torch.testing.assert_close(pruned(input_ids=ids).logits, want, rtol=0, atol=1e-5)
        assert pruned.generate(ids[:1], attention_mask=torch.ones_like(ids[:1]), max_new_tokens=6,
                               do_sample=False)[0].tolist() == written


@pytest.mark.parametrize("family", sorted(PLANS))
def test_pruned_decoder_equals_gated_here(family, tiny_folder):
    m = load(f"hf:{tiny_folder(family)}")
    plan = PLANS[family][1]
    ids = _ids(m.tokenizer)
    want, _ = _gated(m, plan, ids)
    pruned = pruned_copy(m.model, plan)
    assert head_counts(pruned) == _positions(family, plan)  # query positions, silent padding heads included
    assert head_counts(m.model) == [4, 4]  # the cached model is left whole
    with torch.no_grad():
        torch.testing.assert_close(pruned(input_ids=ids).logits, want, rtol=0, atol=1e-5)
    if family == "llama":  # layer 0 keeps heads 0, 2, 3 (groups of 1 and 2): group 0 padded; layer 1 one group
        attns = [layer.self_attn for layer in pruned.model.layers]
        assert [a.head_of for a in attns] == [[0, -1, 2, 3], [0, 1]]
        assert [a.k_proj.out_features // 8 for a in attns] == [2, 1]
        assert [a.num_key_value_groups for a in attns] == [2, 2]


def test_pruning_a_padded_export_again_gives_the_layout_of_one_cut(tiny_folder, tmp_path):
    """Layer 0 loses H1 (group 0 padded with a silent head at position 1); the export is loaded: removing the silent
    position changes nothing, removing position 0 (original H0) takes group 0 whole, and the second export (its plan
    composed to {0: [0, 1]}) rebuilds and loads with that layout."""
    from models.pruned_hf import load_pruned

    m = load(f"hf:{tiny_folder('llama')}")
    export(pruned_copy(m.model, {0: [1]}), {0: [1]}, str(tmp_path / "once"), m.tokenizer)
    once = load_pruned(str(tmp_path / "once"), auto="AutoModelForCausalLM")
    assert once.model.layers[0].self_attn.head_of == [0, -1, 2, 3]
    assert pruned_copy(once, {0: [1]}).model.layers[0].self_attn.head_of == [0, -1, 2, 3]  # silent: not a head
    export(pruned_copy(once, {0: [1]}), {0: [1]}, str(tmp_path / "same"), m.tokenizer)
    assert json.loads((tmp_path / "same" / "plan.json").read_text()) == {"0": [1]}
    twice = pruned_copy(once, {0: [0]})
    attn = twice.model.layers[0].self_attn
    assert attn.head_of == [2, 3] and attn.num_key_value_groups == 2 and attn.k_proj.out_features == 8
    ids = _ids(m.tokenizer)
    want, _ = _gated(m, {0: [0, 1]}, ids)
    export(twice, {0: [0]}, str(tmp_path / "twice"), m.tokenizer)
    assert json.loads((tmp_path / "twice" / "plan.json").read_text()) == {"0": [0, 1]}
    again = load_pruned(str(tmp_path / "twice"), auto="AutoModelForCausalLM")
    with torch.no_grad():
        torch.testing.assert_close(twice(input_ids=ids).logits, want, rtol=0, atol=1e-5)
        torch.testing.assert_close(again(input_ids=ids).logits, want, rtol=0, atol=1e-5)


def test_an_exported_decoder_in_the_sidebar_shows_its_kept_heads_as_the_gated_model(tiny_folder, tmp_path):
    """hf:<export> in this app: the pruned heads' rows are blank (layer 0's silent padding head is not shown), the
    kept heads attend as in the gated model."""
    m = load(f"hf:{tiny_folder('llama')}")
    plan = PLANS["llama"][1]
    export(pruned_copy(m.model, plan), plan, str(tmp_path / "out"), m.tokenizer)
    shown = load(f"hf:{tmp_path / 'out'}")
    assert [layer.self_attn.head_of for layer in shown.model.model.layers] == [[0, -1, 2, 3], [0, 1]]
    trace = shown.attend("The river bank", new_tokens=2)
    with gated(m.model, mask(head_counts(m.model), plan)):
        want = m.attend("The river bank", new_tokens=2)
    assert "3 heads were pruned from this model: their rows are blank." in trace.notices
    assert trace.output == want.output and trace.weights.shape == want.weights.shape == (2, 4, 17, 17)  # <s>, 16 chars
    for layer in range(2):
        for h in range(4):
            if h in plan.get(layer, []):
                assert not trace.weights[layer, h].any()
            else:
                torch.testing.assert_close(trace.weights[layer, h], want.weights[layer, h], rtol=0, atol=1e-5)


@pytest.mark.slow  # one fresh interpreter importing torch and transformers, four exports: ~45 s on 2 busy cores
def test_decoder_exports_load_anywhere_with_transformers_alone(tiny_folder, tmp_path):
    specs, want = [], {}
    for family, (stock, plan) in PLANS.items():
        m = load(f"hf:{tiny_folder(family)}")
        ids = _ids(m.tokenizer)
        folder = tmp_path / family
        export(pruned_copy(m.model, plan), plan, str(folder), m.tokenizer)
        config = json.loads((folder / "config.json").read_text())
        assert config["model_type"] == f"pruned-{family}" and config["auto_map"]["AutoModelForCausalLM"] == \
            f"modeling_pruned.Pruned{stock}"
        readme = (folder / "README.md").read_text()
        assert 'AutoModelForCausalLM.from_pretrained("<this folder>", trust_remote_code=True)' in readme
        assert ("Key/value groups partly removed" in readme) == (family != "gpt2")
        specs.append(f"{folder}|{stock}|{json.dumps(ids.tolist())}")
        want[str(folder)] = (m, plan, ids, *_gated(m, plan, ids))
    script = tmp_path / "outside.py"
    script.write_text(OUTSIDE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HF_HUB_OFFLINE": "1",
                                                                         "HF_HOME": str(tmp_path / "hf")}
    run = subprocess.run([sys.executable, "-I", str(script), *specs], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Do you wish to run the custom code" not in run.stdout + run.stderr
    got = json.loads(next(line for line in run.stdout.splitlines() if line.startswith("{")))
    for folder, (m, plan, ids, logits, written) in want.items():
        out, family = got[folder], os.path.basename(folder)
        assert out["class"] == f"Pruned{PLANS[family][0]}", out["class"]
        assert out["attn_width"] == [8 * n for n in _positions(family, plan)]  # head size 8
        torch.testing.assert_close(torch.tensor(out["logits"]), logits, rtol=0, atol=1e-5)
        assert out["written"] == written  # greedy decoding through the KV cache, tokens as the gated model's
        prompt = m.tokenizer.decode(ids[0], skip_special_tokens=True)
        assert out["pipeline"] == prompt + m.tokenizer.decode(written[ids.shape[1]:], skip_special_tokens=True)
        assert out["stock"].startswith("refused: ") and "model.safetensors" in out["stock"], out["stock"]


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_inside_a_head_of_an_export_reads_its_kept_heads_at_their_original_index(family, tiny_folder, tmp_path):
    """head_qkv of a padded Llama export (and a GPT-2 one) for an original head: its own weights equal the gated
    model's, and softmax(q kᵀ/√d + causal mask) of its q and k gives them; a pruned head gets a sentence."""
    from models.internals import decoder_head_qkv

    m = load(f"hf:{tiny_folder(family)}")
    plan = {0: [1], 1: [0, 1, 2]}
    export(pruned_copy(m.model, plan), plan, str(tmp_path / "out"), m.tokenizer)
    shown = load(f"hf:{tmp_path / 'out'}")
    with gated(m.model, mask(head_counts(m.model), plan)):
        want = m.attend("The river bank")
    for layer, head in [(0, 2), (0, 3), (1, 3)]:
        got = decoder_head_qkv(shown, "The river bank", layer, head)
        torch.testing.assert_close(torch.tensor(got.model_weights), torch.tensor(want.weights[layer, head]),
                                   rtol=0, atol=1e-5)
        q, k = torch.tensor(got.q), torch.tensor(got.k)                                   # (T, hd) each
        scores = (q @ k.T / q.shape[1] ** 0.5).masked_fill(torch.ones(len(q), len(q)).triu(1).bool(), -torch.inf)
        torch.testing.assert_close(scores.softmax(-1), torch.tensor(got.model_weights), rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="L0 H1 was pruned from this model"):
        decoder_head_qkv(shown, "The river bank", 0, 1)


def test_a_plan_on_a_padded_export_in_the_original_numbering(tiny_folder, tmp_path):
    """original_plan: the export's cut (L0 H1, a silent head at position 1) and a new plan in positions as the
    model is now (position 2 = original H2; the silent position is no head), as the pruning page's note reads it."""
    from models.pruned_hf import load_pruned
    from models.pruned_modeling import original_plan

    m = load(f"hf:{tiny_folder('llama')}")
    assert original_plan(m.model, {0: [3]}) == {0: [3]} and original_plan(load(f"hf:{tiny_folder('gpt2')}").model,
                                                                            {0: [3]}) is None
    export(pruned_copy(m.model, {0: [1]}), {0: [1]}, str(tmp_path / "out"), m.tokenizer)
    once = load_pruned(str(tmp_path / "out"), auto="AutoModelForCausalLM")
    assert original_plan(once, {}) == {0: [1]}
    assert original_plan(once, {0: [1, 2], 1: [0]}) == {0: [1, 2], 1: [0]}
