"""Head gates and patching on decoders models.sites finds by their layout, not by a branch per family: tiny random
models of transformers' causal LMs (bench/tiny_any.py), loaded as a user's folder is (models.load("hf:<folder>")).

Gating one head to 0 through models.gates must equal a reference written here: a private deepcopy of the model whose
output projection (named below by its path in the family's own module tree, with its head count) has that head's
slice of its input zeroed by a forward pre-hook. Multi-head latent attention (DeepSeek-V2/V3, MiniCPM3, GLM-4-MoE-Lite,
AXK, HY-V4, Youtu) is the case where the head size is the values' (v_head_dim), not the config's head_dim.
experiments.patching.patch_heads must run and its clean logit difference equal a plain forward's; patch_residual's
first layer must restore the clean answer exactly where the texts differ and nowhere else (CPM-Ant, whose layers
also read learned prompt positions, is refused there in one sentence).

Not covered, and checked refused in one sentence: JetMoE (its heads are a mixture of attention experts), LongCat-Flash
(two attention modules a layer), HRM (two stacks run again and again). Hybrids, gated at their attending layers
alone, are tests/models/test_hybrid.py's."""
import copy

import numpy as np
import pytest
import torch

import models
from bench.tiny_any import save
from experiments.patching import patch_heads, patch_residual
from limits.errors import UserError
from models import gates
from models.sites import head_sites

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

TEXT, CORRUPT, ANSWER, WRONG = "abcab", "abdab", "c", "d"
LAYER, HEAD, GAP = 1, 1, 1e-6
# model_type -> (output projection of layer {l} in the causal LM's module tree, its heads)
PATHS = {
    "opt": ("model.decoder.layers.{l}.self_attn.out_proj", 4),
    "bloom": ("transformer.h.{l}.self_attention.dense", 4),
    "ctrl": ("transformer.h.{l}.multi_head_attention.dense", 4),
    "falcon": ("transformer.h.{l}.self_attention.dense", 4),
    "modernbert-decoder": ("model.layers.{l}.attn.Wo", 4),
    "openai-gpt": ("transformer.h.{l}.attn.c_proj", 4),
    "cpmant": ("cpmant.encoder.layers.{l}.self_att.self_attention.attention_out", 4),
    "llama4_text": ("model.layers.{l}.self_attn.o_proj", 4),
    "mpt": ("transformer.blocks.{l}.attn.out_proj", 4),
    "trocr": ("model.decoder.layers.{l}.self_attn.out_proj", 4),
    "gpt_neo": ("transformer.h.{l}.attn.attention.out_proj", 4),
    "codegen": ("transformer.h.{l}.attn.out_proj", 4),
    **{t: ("model.layers.{l}.self_attn.o_proj", 4) for t in ("deepseek_v2", "deepseek_v3", "minicpm3",
                                                              "glm4_moe_lite", "axk1", "axk2", "hy_v4", "youtu")},
}
REFUSED = ["jetmoe", "longcat_flash", "hrm_text"]


def width(proj: torch.nn.Module) -> int:
    return proj.in_features if hasattr(proj, "in_features") else proj.weight.shape[0]  # GPT's Conv1D: (in, out)


def zeroed(model: torch.nn.Module, path: str, heads: int) -> torch.nn.Module:
    """A private copy whose projection at `path` sees head HEAD of its input zeroed."""
    ref = copy.deepcopy(model)
    proj = ref.get_submodule(path.format(l=LAYER))
    size = width(proj) // heads

    def zero(module, args):
        x = args[0].clone()                                     # (B, T, H*hs)
        x[..., HEAD * size:(HEAD + 1) * size] = 0
        return (x,) + args[1:]
    proj.register_forward_pre_hook(zero)
    return ref


@pytest.mark.parametrize("model_type", sorted(PATHS))
def test_one_head_gated_off_equals_its_slice_zeroed_and_patching_runs(model_type, tmp_path):
    path, heads = PATHS[model_type]
    m = models.load("hf:" + save(model_type, "causal", tmp_path))
    sites = head_sites(m.model)
    assert [s.heads for s in sites] == [heads] * len(sites)
    assert sites[LAYER].proj is m.model.get_submodule(path.format(l=LAYER))
    ids = m.tokenizer(TEXT, return_tensors="pt")["input_ids"]
    ref = zeroed(m.model, path, heads)
    with torch.no_grad():
        plain = m.model(input_ids=ids).logits                  # (1, T, V)
        with gates.gated(m.model, gates.mask(gates.head_counts(m.model), {LAYER: [HEAD]})):
            got = m.model(input_ids=ids).logits                 # (1, T, V)
        want = ref(input_ids=ids).logits                        # (1, T, V)
    assert float((got - want).abs().max()) <= GAP
    assert float((got - plain).abs().max()) > 1e-4               # the head did something: the check can fail

    p = patch_heads(m, TEXT, CORRUPT, ANSWER, WRONG)
    with torch.no_grad():  # the decoder's prompt: the next token follows the text, not the end token it appends
        last = m.model(input_ids=m.encode(TEXT)[0]).logits[0, -1].double()  # (V,)
    ia, iw = (m.tokenizer.convert_tokens_to_ids(t) for t in (ANSWER, WRONG))
    assert np.isfinite(p.scores).any()
    assert abs(p.clean_diff - float(last[ia] - last[iw])) <= 1e-4


@pytest.mark.parametrize("model_type", REFUSED)
def test_a_layout_heads_cannot_be_read_from_is_refused_in_one_sentence(model_type, tmp_path):
    m = models.load("hf:" + save(model_type, "causal", tmp_path))
    with pytest.raises(UserError, match=r"^(Head gates, ablation and patching cover|The attention module)"):
        head_sites(m.model)


@pytest.mark.parametrize("model_type", sorted(PATHS))
def test_the_first_layers_residual_restores_the_answer_only_where_the_texts_differ(model_type, tmp_path):
    m = models.load("hf:" + save(model_type, "causal", tmp_path))
    if model_type == "cpmant":
        with pytest.raises(UserError, match="cannot be patched token by token"):
            patch_residual(m, TEXT, CORRUPT, ANSWER, WRONG)
        return
    p = patch_residual(m, TEXT, CORRUPT, ANSWER, WRONG)
    want = np.array([a != b for a, b in zip(p.tokens, p.corrupt_tokens)], dtype=float)  # (T,)
    assert want.sum() == 1
    # a share of clean - corrupt, which on a tiny random model can be ~1e-5 logits (ModernBERT-decoder's window hides
    # the changed token from most paths): float32 noise of a batch of T rows then moves a score by a few percent
    assert np.abs(np.asarray(p.scores)[0] - want).max() <= 0.05
