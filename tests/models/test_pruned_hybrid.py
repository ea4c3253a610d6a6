"""Pruned exports of hybrids (models.pruned_modeling with models.layer_kinds): the plan numbers the attending layers
alone, L0, L1, ..., as every view does, and the exported code finds the same layers from the config's per-layer kinds,
so a cut lands on the model's own attending layer and its mamba, linear-attention or convolution layers stay whole.
Checked on tiny random models (bench.tiny_any: one attending layer beside layers of the other kinds): Jamba (mamba),
Qwen3-Next (a query head's rows in q_proj hold its query and its output gate), LFM2-MoE (out_proj), Nemotron-H (its
attention under `mixer`), Ling's Bailing (latent attention with one gate logit per head, g_proj), LFM3 (the same gate
on a Llama-style head) and MiniMax (attends in its layer 0). Each export reloads equal to the model gated here within
1e-5, a layer that lost every head included, and in a fresh Python without this project (slow). OLMo-Hybrid's q/k
norm spans every head, so it is refused in the sentence that says so."""
import pytest
import torch

import models
from bench.tiny_any import save
from experiments.pruning import exact_gap
from limits.errors import UserError
from models.gates import gated, head_counts, mask
from models.prune import original_heads, pruned_copy
from models.pruned_hf import export, load_pruned
from models.pruned_modeling import attention_layers
from tests.models.test_pruned_more_layouts import assert_reloaded_outside

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

TEXT = "The cat sat on the mat"
# model_type -> (its attending layer's number in the model, the attention's output projection there)
HYBRIDS = {"jamba": (1, "self_attn.o_proj"), "qwen3_next": (1, "self_attn.o_proj"),
           "lfm2_moe": (1, "self_attn.out_proj"), "nemotron_h": (2, "mixer.o_proj"),
           "bailing_hybrid": (1, "self_attn.o_proj"), "lfm3": (1, "self_attn.o_proj"),
           "minimax": (0, "self_attn.o_proj")}
# a tiny model's 4 query heads read 2 key/value heads where it groups them: "one" leaves a group with one query head,
# padded with a silent one (kv_layout), "group" takes a whole group, "all" leaves the layer one silent head
PLANS = {"one": {0: [1]}, "group": {0: [0, 1]}, "all": {0: [0, 1, 2, 3]}}
HELD = {"one": [0, 2, 3], "group": [2, 3], "all": []}


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[tuple[str, str], dict]:
    """{(model_type, plan name): the folder, the ids, the gated model's logits (T, V), the reloaded model, the full}."""
    out = {}
    for model_type in HYBRIDS:
        root = tmp_path_factory.mktemp(model_type)
        m = models.load("hf:" + save(model_type, "causal", root / "full"))
        ids = m.tokenizer(TEXT, return_tensors="pt")["input_ids"]                       # (1, T)
        for name, plan in PLANS.items():
            folder = str(root / name)
            pruned = pruned_copy(m.model, plan)
            export(pruned, plan, folder, m.tokenizer)
            with torch.no_grad(), gated(m.model, mask(head_counts(m.model), plan)):
                want = m.model(input_ids=ids).logits[0]                                  # (T, V)
            out[model_type, name] = {"folder": folder, "ids": ids[0].tolist(), "want": want, "full": m.model,
                                     "reloaded": load_pruned(folder, auto="AutoModelForCausalLM")}
    return out


@pytest.mark.slow  # the module's 21 exports: ~12 s
@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("model_type", HYBRIDS)
def test_a_hybrids_export_reloads_as_the_gated_model(exports, model_type, plan):
    e = exports[model_type, plan]
    ids = torch.tensor([e["ids"]])
    with torch.no_grad():
        got = e["reloaded"](input_ids=ids).logits[0]                                    # (T, V)
    torch.testing.assert_close(got, e["want"], rtol=0, atol=1e-5)
    held = [h for h in original_heads(e["reloaded"])[0] if h >= 0]           # silent padding heads left out
    assert held == HELD[plan]


@pytest.mark.slow  # the module's exports
@pytest.mark.parametrize("model_type", HYBRIDS)
def test_the_cut_lands_on_the_models_own_attending_layer(exports, model_type):
    """L0 of the plan is the model's attending layer (Jamba's layer 1, Nemotron-H's 2, MiniMax's 0): that layer's
    output projection lost two heads' columns and every other layer kept each of its parameters' shapes."""
    own, out_proj = HYBRIDS[model_type]
    full, cut = exports[model_type, "group"]["full"], exports[model_type, "group"]["reloaded"]
    shapes = {name: p.shape for name, p in full.named_parameters()}
    changed = {name for name, p in cut.named_parameters() if p.shape != shapes[name]}
    assert f"model.layers.{own}.{out_proj}.weight" in changed
    assert all(name.startswith(f"model.layers.{own}.") for name in changed), changed
    assert len(attention_layers(full)[1]) == 1


def test_qwen3_next_keeps_each_kept_heads_query_and_gate(tmp_path):
    """Qwen3-Next's q_proj holds, head by head, the head's query and then its output gate (2 · head_dim rows): a cut
    head takes both away, and the rows kept are the kept heads' own."""
    m = models.load("hf:" + save("qwen3_next", "causal", tmp_path / "m"))
    attn = attention_layers(m.model)[1][0]
    hd, before = attn.head_dim, attn.q_proj.weight.detach().clone()                  # (4 · 2 hd, C)
    cut = attention_layers(pruned_copy(m.model, {0: [0, 1]}))[1][0]
    assert cut.q_proj.weight.shape[0] == 2 * 2 * hd
    kept = torch.cat([before[h * 2 * hd:(h + 1) * 2 * hd] for h in (2, 3)])
    assert torch.equal(cut.q_proj.weight.detach(), kept)


def test_olmo_hybrid_is_refused_in_the_sentence_that_says_why(tmp_path):
    """OLMo-Hybrid norms q and k over every head together, so a cut changes the heads kept: the app's check before
    it exports measures the difference and says so."""
    m = models.load("hf:" + save("olmo_hybrid", "causal", tmp_path / "m"))
    pruned = pruned_copy(m.model, {0: [1]})
    with pytest.raises(UserError, match=r"^Cutting heads out of this OlmoHybridForCausalLM changes what its other"):
        exact_gap(m.model, pruned, {0: [1]}, m.tokenizer, [TEXT])


@pytest.mark.slow  # a fresh Python that imports transformers and loads every folder
def test_hybrid_exports_load_without_the_project(exports):
    assert_reloaded_outside(exports)


def test_the_pruning_page_cuts_a_hybrids_heads_and_offers_the_export(tmp_path):
    """A researcher's Jamba on the Pruning page: it says which of the model's layers L0 is, real pruning runs and the
    pruned model is offered as a .zip."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = save("jamba", "causal", tmp_path / "m")
    at.session_state["text"] = TEXT
    at.run()
    at.switch_page("views/pruning.py").run()
    assert any("(its layer 1, shown as L0)" in w.value for w in at.warning), [w.value for w in at.warning]
    at.toggle(key="prune_real").set_value(True).run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    assert any(b.label == "Pruned model (.zip)" for b in at.get("download_button"))
