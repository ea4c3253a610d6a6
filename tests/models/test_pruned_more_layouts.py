"""Pruned exports of the decoder layouts beyond BERT, GPT-2 and Llama: OPT-style (q/k/v/out_proj with biases: OPT,
BioGPT, XGLM), Phi-3 (one qkv_proj of [q | k | v] rows, grouped keys and values), GPT-NeoX-style (one query_key_value
of [q_h | k_h | v_h] per head: GPT-NeoX, Persimmon) and Phi (Llama's q/k/v with a dense output). Each export is
smaller than the model, reloads as the gated model, a layer that lost every head included, and loads in a fresh
Python that has no module of this project (trust_remote_code): one subprocess for every folder."""
import json
import subprocess
import sys

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
            "persimmon": ("GPT-NeoX", {}), "phi": ("Llama", {})}
PLANS = {"some": {0: [1], 1: [0, 2]}, "all": {0: [0, 1, 2, 3], 1: [3]}}  # "all": layer 0 keeps one silent head

# a fresh Python whose path holds only the standard library and site-packages (-I): every folder is built from its
# own modeling_pruned.py, never from this project
OUTSIDE = """
import json, sys
import torch, transformers
assert not any(m == "models" or m.startswith("models.") for m in sys.modules)
out = {}
for folder, ids in json.loads(sys.stdin.read()).items():
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
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
        root = tmp_path_factory.mktemp(family)
        m = models.load("hf:" + save(family, "causal", root / "full", **extra))
        assert head_counts(m.model) == [4, 4]
        ids = m.tokenizer(TEXT, return_tensors="pt")["input_ids"]                       # (1, T)
        for name, plan in PLANS.items():
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
    run = subprocess.run([sys.executable, "-I", "-c", OUTSIDE], capture_output=True, text=True, timeout=600,
                         input=json.dumps({e["folder"]: e["ids"] for e in exports.values()}),
                         cwd=next(iter(exports.values()))["folder"])
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout[run.stdout.rindex("RESULT ") + len("RESULT "):].splitlines()[0])
    for key, e in exports.items():
        torch.testing.assert_close(torch.tensor(got[e["folder"]]), e["want"].float(), rtol=0, atol=1e-5,
                                   msg=lambda m, key=key: f"{key}: {m}")
