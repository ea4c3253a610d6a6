"""Pruned exports of multi-head latent attention (MLA) decoders: DeepSeek-V2, V3 and V3.2 (with its sparse-attention
indexer), GLM-4-MoE-Lite, GLM-MoE-DSA, MiniCPM3 and Youtu, with a query LoRA (q_a_proj, q_b_proj) and, where the
family allows it, without one (q_proj). Per head go q rows [q_nope | q_rope], kv_b_proj rows [k_nope | v] and o_proj
columns; the shared latents (q_a_proj, kv_a_proj_with_mqa, their norms, the rope key) stay whole. Each export is
smaller, its sliced weights have the kept heads' shapes, and a fresh Python with no module of this project reloads it
(trust_remote_code) as the model gated here, within 1e-5. LongCat-Flash (two MLAs a layer) has no head gates, so it
is refused before any cut."""

import pytest
import torch

import models
from bench.tiny_any import MLA, save
from models.gates import gated, head_counts, mask
from models.prune import pruned_copy
from models.pruned_hf import export, load_pruned
from models.pruned_modeling import attention_layers
from tests.models.test_pruned_more_layouts import assert_reloaded_outside

pytestmark = pytest.mark.usefixtures("one_thread_per_module")

TEXT = "The cat sat on the mat"
PLAN = {0: [1], 1: [0, 1, 3]}                      # layer 1 keeps one head (H2)
NONE_KEPT = {0: [0, 1, 2, 3]}                      # layer 0 keeps one silent head
FAMILIES = {"deepseek_v2": {}, "deepseek_v2/q_proj": {"q_lora_rank": None}, "deepseek_v3": {},
            "deepseek_v3/q_proj": {"q_lora_rank": None}, "deepseek_v32": {}, "glm4_moe_lite": {},
            "glm_moe_dsa": {}, "minicpm3": {}, "minicpm3/q_proj": {"q_lora_rank": None}, "youtu": {}}
QK, KV, V = MLA["qk_nope_head_dim"] + MLA["qk_rope_head_dim"], MLA["qk_nope_head_dim"] + MLA["v_head_dim"], \
    MLA["v_head_dim"]                              # per-head rows of q, of kv_b_proj; o_proj columns


def _size(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[tuple[str, str], dict]:
    """{(family, plan name): folder, ids, the gated and ungated logits (T, V), the reloaded ones, the cut model}."""
    out = {}
    for family, extra in FAMILIES.items():
        root = tmp_path_factory.mktemp(family.replace("/", "-"))
        m = models.load("hf:" + save(family.split("/")[0], "causal", root / "full", **extra))
        ids = m.tokenizer(TEXT, return_tensors="pt")["input_ids"]                       # (1, T)
        for name, plan in (("two", PLAN), ("none kept", NONE_KEPT)):
            if name == "none kept" and family not in ("deepseek_v3", "minicpm3/q_proj"):
                continue
            folder = str(root / name.replace(" ", "-"))
            cut = pruned_copy(m.model, plan)
            export(cut, plan, folder, m.tokenizer)
            reloaded = load_pruned(folder, auto="AutoModelForCausalLM")
            with torch.no_grad():
                whole = m.model(input_ids=ids).logits[0]                                 # (T, V)
                with gated(m.model, mask(head_counts(m.model), plan)):
                    want = m.model(input_ids=ids).logits[0]                              # (T, V)
                got = reloaded(input_ids=ids).logits[0]                                  # (T, V)
            out[family, name] = {"folder": folder, "ids": ids[0].tolist(), "want": want, "whole": whole, "got": got,
                                 "layout": attention_layers(m.model)[0], "cut": reloaded,
                                 "sizes": (_size(m.model), _size(reloaded))}
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_an_mla_export_reloads_as_the_gated_model_and_is_smaller(exports, family):
    e = exports[family, "two"]
    assert e["layout"] == "MLA"
    assert (e["want"] - e["whole"]).abs().max() > 1e-3          # the cut heads mattered: a test that can fail
    torch.testing.assert_close(e["got"], e["want"], rtol=0, atol=1e-5)
    whole, pruned = e["sizes"]
    assert pruned < whole


@pytest.mark.parametrize("family", FAMILIES)
def test_the_sliced_weights_hold_the_kept_heads(exports, family):
    """Layer 0 keeps 3 heads, layer 1 one: q (q_b_proj or q_proj), kv_b_proj and o_proj are cut to them; the shared
    latent projections keep their unpruned shapes."""
    cut = exports[family, "two"]["cut"]
    assert head_counts(cut) == [3, 1]
    for layer, n in zip(cut.model.layers, (3, 1)):
        a = layer.self_attn
        q = a.q_proj if a.q_lora_rank is None else a.q_b_proj
        assert q.weight.shape[0] == n * QK
        assert a.kv_b_proj.weight.shape == (n * KV, MLA["kv_lora_rank"])
        assert a.o_proj.weight.shape == (32, n * V)
        assert a.kv_a_proj_with_mqa.weight.shape == (MLA["kv_lora_rank"] + MLA["qk_rope_head_dim"], 32)
        assert a.num_heads == n


@pytest.mark.parametrize("family", ["deepseek_v3", "minicpm3/q_proj"])
def test_a_layer_that_loses_every_head_keeps_one_silent_head(exports, family):
    e = exports[family, "none kept"]
    assert head_counts(e["cut"]) == [1, 4]
    assert not e["cut"].model.layers[0].self_attn.o_proj.weight.any()
    torch.testing.assert_close(e["got"], e["want"], rtol=0, atol=1e-5)


@pytest.mark.slow  # a fresh Python that imports transformers and loads every folder: ~20 s
def test_mla_exports_load_without_the_project(exports):
    worst = assert_reloaded_outside(exports)
    print(f"largest logit difference over {len(exports)} MLA exports reloaded outside the project: {worst:.3g}")


def test_longcat_flash_two_latent_attentions_a_layer_are_refused_in_one_sentence():
    """LongCat-Flash runs two MLAs in each layer (self_attn is a ModuleList): no head gates reach them, so the pruning
    report refuses it before anything is cut."""
    from bench.tiny_any import build, tokenizer
    from experiments.pruning import report
    from limits.errors import UserError

    with pytest.raises(UserError) as refused:
        report(build("longcat_flash", "causal"), tokenizer(), {0: [1]}, [TEXT])
    assert "laid out otherwise" in str(refused.value)
