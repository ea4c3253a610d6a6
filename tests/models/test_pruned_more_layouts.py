"""Pruned exports of the decoder layouts beyond BERT, GPT-2 and Llama: OPT-style (q/k/v/out_proj with biases or none:
OPT, BioGPT, XGLM, GPT-J with partial rotary, GPT-Neo with a local layer), Phi-3 (one qkv_proj of [q | k | v] rows,
grouped keys and values), GPT-NeoX-style (one query_key_value of [q_h | k_h | v_h] per head: GPT-NeoX, Persimmon), Phi
(Llama's q/k/v with a dense output), Falcon (query_key_value by key/value group: multi-query, grouped and multi-head),
CodeGen (qkv_proj in 4 blocks of [q | v | k], 8 heads so that a layer can lose a block's worth), Llama-style layouts
with per-head parts (gpt-oss's sinks, Granite-SWA's sinks, StableLM's per-head q/k norms), Llama 4 (its layers under
.model), GPT-1 (GPT-2's Conv1D with n_head), CTRL (Wq, Wk, Wv, dense), GPT-BigCode (a Linear c_attn: multi-query or
head by head), Falcon-H1 (Llama's attention beside a mamba) and MiMo-V2-Flash (v_head_dim; its sliding layers hold
twice the key/value heads), Laguna (an output gate g_proj of one row per head, or per head and dimension). Each export
is smaller than the model, reloads as the gated model, a layer that lost every head included, and loads in a fresh
Python that has no module of this project (trust_remote_code; modeling_pruned.py imports pruned_slicing.py beside it):
one subprocess for every folder. BLOOM (GPT-NeoX's layout), MPT (one Wqkv) and Falcon with ALiBi (multi-query and
grouped) keep each kept head's ALiBi slope; Doge and Inkling are refused in one sentence before anything is exported."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import models
from bench.tiny_any import save
from models.gates import gated, head_counts, mask
from models.prune import pruned_copy
from models.pruned_hf import export, load_pruned
from models.pruned_modeling import attention_layers

TEXT = "The cat sat on the mat"
FAMILIES = {"opt": ("OPT", {}), "biogpt": ("OPT", {}), "xglm": ("OPT", {}),
            "phi3": ("Phi-3", {"num_key_value_heads": 2}), "gpt_neox": ("GPT-NeoX", {}),
            "persimmon": ("GPT-NeoX", {}), "phi": ("Llama", {}), "gptj": ("OPT", {}), "gpt_neo": ("OPT", {}),
            "falcon": ("Falcon", {}),  # multi-query by default
            "falcon/grouped": ("Falcon", {"new_decoder_architecture": True, "num_kv_heads": 2}),
            "falcon/multi-head": ("Falcon", {"multi_query": False}),
            "codegen": ("CodeGen", {"hidden_size": 64, "num_attention_heads": 8}),
            "gpt_oss": ("Llama", {}), "granite_swa": ("Llama", {}), "stablelm": ("Llama", {"qk_layernorm": True}),
            "llama4_text": ("Llama", {}), "openai-gpt": ("GPT-2", {}), "ctrl": ("CTRL", {}),
            "gpt_bigcode": ("GPT-BigCode", {}), "gpt_bigcode/multi-head": ("GPT-BigCode", {"multi_query": False}),
            "falcon_h1": ("Llama", {}),  # its mamba's mup_vector, a buffer its model's init fills, was left unset
            "mimo_v2_flash": ("Llama", {}),  # values of their own head size; sliding layers with twice the k/v heads
            "bloom": ("GPT-NeoX", {}), "mpt": ("MPT", {}),  # ALiBi: each kept head keeps its own slope
            "dbrx": ("DBRX", {}),  # one Wqkv of [q | k | v], grouped; its attention inside a norm wrapper
            "laguna": ("Llama", {}), "laguna/elementwise": ("Llama", {"gating": "elementwise"}),  # g_proj by head
            "falcon/alibi": ("Falcon", {"alibi": True}),  # its slopes also in the mask its model hands each layer
            "falcon/alibi-grouped": ("Falcon", {"alibi": True, "new_decoder_architecture": True, "num_kv_heads": 2})}
PLANS = {"some": {0: [1], 1: [0, 2]}, "all": {0: [0, 1, 2, 3], 1: [3]}}  # "all": layer 0 keeps one silent head
# CodeGen's 8 heads go in 4 equal blocks: a layer is smaller only once it loses 2, 4 or 6 of them (L0 of "some"), and
# a layer that keeps 6 is padded with 2 silent heads (L1 of "some")
EIGHT = {"some": {0: [1, 2, 5, 6], 1: [0, 2]}, "all": {0: list(range(8)), 1: [3, 4]}}

# a fresh Python whose path holds only the standard library and site-packages (-I): every folder is built from its
# own modeling_pruned.py, never from this project, with eager attention as the app loads every model (transformers'
# own ALiBi Falcon differs between its eager and sdpa paths)
OUTSIDE = """
import json, sys
import torch, transformers
assert not any(m == "models" or m.startswith("models.") for m in sys.modules)
out = {}
for folder, ids in json.loads(sys.stdin.read()).items():
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True,
                                                              attn_implementation="eager").eval()
    assert type(model).__name__.startswith("Pruned"), type(model).__name__
    with torch.no_grad():
        out[folder] = model(input_ids=torch.tensor([ids])).logits[0].tolist()
print("RESULT", json.dumps(out))
"""


def _size(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[tuple[str, str], dict]:
    """{(family, plan name): the folder, the ids, the gated model's logits (T, V), the sizes, the reloaded logits}."""
    out = {}
    for family, (_, extra) in FAMILIES.items():
        root = tmp_path_factory.mktemp(family.replace("/", "-"))
        m = models.load("hf:" + save(family.split("/")[0], "causal", root / "full", **extra))
        heads = extra.get("num_attention_heads", 4)
        assert head_counts(m.model) == [heads, heads]
        ids = m.tokenizer(TEXT, return_tensors="pt")["input_ids"]                       # (1, T)
        for name, plan in (EIGHT if heads == 8 else PLANS).items():
            folder = str(root / name)
            pruned = pruned_copy(m.model, plan)
            export(pruned, plan, folder, m.tokenizer)
            reloaded = load_pruned(folder, auto="AutoModelForCausalLM")
            with torch.no_grad(), gated(m.model, mask(head_counts(m.model), plan)):
                want = m.model(input_ids=ids).logits[0]                                  # (T, V)
            with torch.no_grad():
                got = reloaded(input_ids=ids).logits[0]
            out[family, name] = {"folder": folder, "ids": ids[0].tolist(), "want": want, "got": got,
                                 "layout": attention_layers(m.model)[0], "sizes": (_size(m.model), _size(reloaded))}
    return out


@pytest.mark.slow  # the module's exports, ~30 of them: ~25 s (the quick group keeps one layout's, test_gates_prune.py)
@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("family", FAMILIES)
def test_an_export_reloads_as_the_gated_model_and_is_smaller(exports, family, plan):
    e = exports[family, plan]
    assert e["layout"] == FAMILIES[family][0]
    torch.testing.assert_close(e["got"], e["want"], rtol=0, atol=1e-5)
    whole, pruned = e["sizes"]
    assert pruned < whole


@pytest.mark.slow  # a fresh Python that imports transformers and loads every folder: ~35 s
def test_exports_load_without_the_project(exports):
    assert_reloaded_outside(exports)


def assert_reloaded_outside(exports: dict) -> float:
    """Every export's folder loaded by a fresh Python that cannot import the project (OUTSIDE), its logits on its ids
    equal to the gated model's (want) within 1e-5; returns the largest difference."""
    run = subprocess.run([sys.executable, "-I", "-c", OUTSIDE], capture_output=True, text=True, timeout=600,
                         input=json.dumps({e["folder"]: e["ids"] for e in exports.values()}),
                         cwd=next(iter(exports.values()))["folder"])
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout[run.stdout.rindex("RESULT ") + len("RESULT "):].splitlines()[0])
    worst = 0.0
    for key, e in exports.items():
        torch.testing.assert_close(torch.tensor(got[e["folder"]]), e["want"].float(), rtol=0, atol=1e-5,
                                   msg=lambda m, key=key: f"{key}: {m}")
        worst = max(worst, (torch.tensor(got[e["folder"]]) - e["want"].float()).abs().max().item())
    return worst


@pytest.mark.slow  # the module's exports
def test_a_codegen_export_cut_again_drops_its_silent_heads(exports, tmp_path):
    """CodeGen pads a layer to a multiple of 4 heads with silent ones; cutting the reloaded export again keeps only
    the original heads still wanted, so its layout is the one a single cut of the combined plan gives."""
    e = exports["codegen", "some"]                              # L0 kept 0, 3, 4, 7; L1 kept 6 + 2 silent
    once = load_pruned(e["folder"], auto="AutoModelForCausalLM")
    assert head_counts(once) == [4, 8]
    again = pruned_copy(once, {0: [0], 1: [0, 1]})             # positions: original L0 H0; L1 H1, H3
    export(again, {0: [0], 1: [0, 1]}, str(tmp_path / "again"))
    reloaded = load_pruned(str(tmp_path / "again"), auto="AutoModelForCausalLM")
    assert reloaded.config.pruned_heads == {"0": [0, 1, 2, 5, 6], "1": [0, 1, 2, 3]}
    assert head_counts(reloaded) == [4, 4]
    full = models.load("hf:" + str(Path(e["folder"]).parent / "full")).model
    ids = torch.tensor([e["ids"]])
    with torch.no_grad(), gated(full, mask(head_counts(full), {0: [0, 1, 2, 5, 6], 1: [0, 1, 2, 3]})):
        want = full(input_ids=ids).logits                                              # (1, T, V)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(input_ids=ids).logits, want, rtol=0, atol=1e-5)


@pytest.mark.slow  # the module's exports
def test_a_bloom_export_cut_again_keeps_each_heads_alibi_slope(exports, tmp_path):
    """A reloaded BLOOM export cut again in one layer: its attention reads the ALiBi rows of the original heads it
    still holds (they had been read as the first ones, and the shapes no longer matched), in memory and exported."""
    e = exports["bloom", "some"]                                # L0 kept 0, 2, 3; L1 kept 1, 3
    once = load_pruned(e["folder"], auto="AutoModelForCausalLM")
    again = pruned_copy(once, {0: [1]})                         # position 1 of L0: original head 2
    export(again, {0: [1]}, str(tmp_path / "again"))
    reloaded = load_pruned(str(tmp_path / "again"), auto="AutoModelForCausalLM")
    assert reloaded.config.pruned_heads == {"0": [1, 2], "1": [0, 2]}
    full = models.load("hf:" + str(Path(e["folder"]).parent / "full")).model
    ids = torch.tensor([e["ids"], e["ids"][::-1]])             # two rows
    with torch.no_grad(), gated(full, mask(head_counts(full), {0: [1, 2], 1: [0, 2]})):
        want = full(input_ids=ids).logits                                              # (2, T, V)
    with torch.no_grad():
        for model in (again, reloaded):
            torch.testing.assert_close(model(input_ids=ids).logits, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize(("family", "extra", "words"), [("doge", {}, "dt_proj"), ("inkling_text", {}, "r_proj")])
def test_a_layout_whose_heads_depend_on_each_other_is_refused_in_one_sentence(family, extra, words):
    """Doge's mask mixes its heads' values; Inkling's relative-position logits come from rows per head the slicing does
    not cut (r_proj), where the cut copy raised a RuntimeError in the pruning view, or passed float32's looser check
    with its heads' logits misplaced."""
    from bench.tiny_any import build, tokenizer
    from experiments.pruning import report
    from limits.errors import UserError

    with pytest.raises(UserError) as refused:
        report(build(family, "causal", **extra), tokenizer(), {0: [1]}, [TEXT])
    said = str(refused.value)
    assert words in said and said.endswith("only its gates apply.") and said.count(". ") == 0, said


def test_the_gap_check_counts_a_nan_both_models_give_as_equal():
    """Granite-SWA in float64 gives NaN itself on a padded row whose sliding window masks every key; the gap check
    counts an output NaN in both as equal (it read NaN, which no limit refuses) and a NaN in one only as no match."""
    from bench.tiny_any import build, tokenizer
    from experiments.pruning import _inputs, exact_gap
    from models.prune import gap_to_gated

    full, plan = build("granite_swa", "causal"), {0: [1]}
    sentences = [TEXT, "A dog"]                                 # the second padded past the window of 3
    inputs = _inputs(tokenizer(), sentences, "cpu")
    with torch.no_grad():
        assert full.double()(**inputs).logits.isnan().any()   # the model's own NaN
    full = build("granite_swa", "causal")
    gap = exact_gap(full, pruned_copy(full, plan), plan, tokenizer(), sentences)
    assert 0 <= gap <= 1e-9
    broken = pruned_copy(full, plan)
    broken.model.layers[1].self_attn.o_proj.weight.data[0, 0] = float("nan")
    assert not gap_to_gated(full, broken, plan, _inputs(tokenizer(), [TEXT], "cpu")) <= 1e-9  # NaN in one: no match


def test_the_gap_check_runs_a_model_whose_float64_forward_fails_in_float32():
    """XGLM fills its mask with a value float64 cannot take ('value cannot be converted to type float without
    overflow'): the check compares float32 copies, as for kernels without float64, where it raised."""
    from bench.tiny_any import build, tokenizer
    from experiments.pruning import EXACT, exact_gap

    full, plan = build("xglm", "causal"), {0: [1]}
    assert 0 <= exact_gap(full, pruned_copy(full, plan), plan, tokenizer(), [TEXT]) <= EXACT[torch.float32]


def test_a_cut_copy_that_does_not_run_is_refused_in_one_sentence():
    """A part of the attention left sized for every head (here an output projection put back whole) makes the cut
    copy raise in float64 and float32 alike: the check says so in one sentence, before anything is exported."""
    from bench.tiny_any import build, tokenizer
    from experiments.pruning import exact_gap
    from limits.errors import UserError

    full, plan = build("llama", "causal"), {0: [0, 1]}                   # a whole key/value group: 2 heads left
    broken = pruned_copy(full, plan)
    broken.model.layers[0].self_attn.o_proj = full.model.layers[0].self_attn.o_proj      # (C, 4 heads' width)
    with pytest.raises(UserError, match="still expects every head") as refused:
        exact_gap(full, broken, plan, tokenizer(), [TEXT])
    assert str(refused.value).count(". ") == 0
