"""models.residual on the decoders whose attention goes through models.capture (GPT-2 with its square Conv1D output
projection, GPT-NeoX with its parallel residual, Llama, Mistral, Qwen2, OPT, Phi, Phi-3, Gemma, Qwen3, Granite,
Mixtral; Gemma 2 and OLMo 2 with sandwich norms; BitNet, which norms its heads' outputs together before their
projection; Cohere's and Granite's logit scales; Gemma 2's final cap): the
heads' writes come from models.capture's record, the rest of each layer from the model's residual. Checked against
hooks written here on a private copy: what each layer adds for its attention (the output projection's output, or its
norm's where the layer norms it) is the sum of its heads' writes and its bias, and the residual rebuilt from the
pieces is what the final norm reads; the logit split sums to the model's own logit (before the cap, where there is
one). What the split cannot follow is refused in one sentence."""
import copy

import pytest
import torch

import models
from bench.tiny_any import save
from experiments.logit_lens import decompose
from limits.errors import UserError
from models.residual import components

TEXT = "The cat sat on"
# the module names this test reads, written per family here (not asked of models/): the attention's output
# projection in each layer, and the final norm
OUT = {"opt": "self_attn.out_proj", "phi": "self_attn.dense", "phi3": "self_attn.o_proj", "gemma": "self_attn.o_proj",
       "qwen3": "self_attn.o_proj", "granite": "self_attn.o_proj", "mixtral": "self_attn.o_proj",
       "cohere": "self_attn.o_proj", "gemma2": "post_attention_layernorm", "olmo2": "post_attention_layernorm",
       "glm4": "post_self_attn_layernorm", "vaultgemma": "self_attn.o_proj", "gpt2": "attn.c_proj",
       "gpt_neox": "attention.dense", "llama": "self_attn.o_proj", "mistral": "self_attn.o_proj",
       "qwen2": "self_attn.o_proj", "bitnet": "self_attn.o_proj"}
SCALED = {"granite": "residual_multiplier"}  # the layer multiplies what the hooked module writes by this
LAYERS = {"opt": "model.decoder.layers", "phi": "model.layers", "gpt2": "transformer.h", "gpt_neox": "gpt_neox.layers"}
NORM = {"opt": "model.decoder.final_layer_norm", "phi": "model.final_layernorm", "gpt2": "transformer.ln_f",
        "gpt_neox": "gpt_neox.final_layer_norm"}


def _load(family: str, tmp_path, **extra):
    return models.load("hf:" + save(family, "causal", tmp_path, **extra))


def _hooked(lm, family: str, T: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """On a copy: each layer's output projection's output at the last position, and the final norm's input there."""
    copy_ = copy.deepcopy(lm)
    writes, read = [], []
    layers = copy_.get_submodule(LAYERS.get(family, "model.layers"))
    for layer in layers:
        scale = getattr(lm.config, SCALED.get(family, ""), 1.0)
        layer.get_submodule(OUT[family]).register_forward_hook(lambda m, i, o, s=scale: writes.append(o[0, -1] * s))
    copy_.get_submodule(NORM.get(family, "model.norm")).register_forward_pre_hook(
        lambda m, args: read.append(args[0][0, -1]))
    return copy_, writes, read



def pieces_are(c, copy_, ids, writes, read, n_layers: int) -> torch.Tensor:
    """Runs the hooked copy on ids and checks the split against it: each layer's heads (and bias) are the attention's
    write the hook took, and the rebuilt residual is what the final norm read. Returns the copy's last logits (V,)."""
    with torch.no_grad():
        logits = copy_(input_ids=ids).logits[0, -1]                  # (V,)
    assert len(writes) == n_layers == c.heads.shape[0]
    for layer, w in enumerate(writes):
        torch.testing.assert_close(c.heads[layer].sum(0) + c.attn_bias[layer], w, rtol=1e-5, atol=1e-5)
    rebuilt = c.embed + c.heads.sum((0, 1)) + c.attn_bias.sum(0) + c.mlp.sum(0)  # (C,)
    torch.testing.assert_close(rebuilt, read[0], rtol=1e-5, atol=1e-5)
    return logits

@pytest.mark.parametrize("family, extra", [(f, {}) for f in sorted(OUT)] + [
    ("granite", {"residual_multiplier": 0.25}), ("gpt_neox", {"use_parallel_residual": False})])
def test_the_pieces_are_the_models_own_writes(family, extra, tmp_path):
    m = _load(family, tmp_path, **extra)
    ids, _ = m.encode(TEXT)
    c = components(m, ids)
    copy_, writes, read = _hooked(m.model, family, ids.shape[1])
    logits = pieces_are(c, copy_, ids, writes, read, m.n_layers)
    d = decompose(m, TEXT)
    own = float(logits[d.target_id])
    cap = getattr(m.config, "final_logit_softcapping", None)
    if cap is not None:  # the parts explain the logit before the cap: c · atanh(own / c)
        own = cap * float(torch.atanh(torch.tensor(own / cap, dtype=torch.float64)))
        assert any("before the cap" in n for n in d.notices)
    assert d.heads.shape == (m.n_layers, m.n_heads)
    assert abs(d.total - own) < 1e-4
    assert abs(d.logit - own) < 1e-5


def test_bitnets_heads_are_each_read_through_its_norm(tmp_path):
    """BitNet norms its heads' concatenated outputs (attn_sub_norm) before o_proj: with the norm's scale frozen there,
    head h's write is o_proj's columns of h times h's slice of the norm's output, read here by a hook on the norm of
    a private copy, not from the split's own factor."""
    m = _load("bitnet", tmp_path)
    ids, _ = m.encode(TEXT)
    c = components(m, ids)
    copy_, normed = copy.deepcopy(m.model), []
    for layer in copy_.model.layers:
        layer.self_attn.attn_sub_norm.register_forward_hook(lambda mod, i, o: normed.append(o[0, -1]))  # (H · d,)
    with torch.no_grad():
        copy_(input_ids=ids)
    H = m.n_heads
    for layer, out in enumerate(normed):
        w_o = copy_.model.layers[layer].self_attn.o_proj.weight                 # (C, H · d)
        d = w_o.shape[1] // H
        own = torch.stack([w_o[:, h * d:(h + 1) * d] @ out[h * d:(h + 1) * d] for h in range(H)])  # (H, C)
        torch.testing.assert_close(c.heads[layer], own, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(c.heads[0], c.heads[0] * 0)  # a zero write would pass the sums above


def test_the_scales_and_the_cap_are_the_configs():
    """The tiny configs carry Cohere's logit_scale, Granite's default scaling of 1 and Gemma 2's cap, so the cases
    above meet them."""
    from bench.tiny_any import config

    assert config("cohere").logit_scale != 1.0 and config("gemma2").final_logit_softcapping is not None


POST_NORM = r"norms the residual stream itself after every attention and MLP \(post-norm"


@pytest.mark.parametrize("family, extra, says", [
    ("cpmant", {}, "computes its own"), ("beam", {}, "depth-scaled residual add"), ("openai-gpt", {}, POST_NORM),
    ("trocr", {}, POST_NORM), ("opt", {"do_layer_norm_before": False}, POST_NORM), ("bart", {}, POST_NORM),
    ("marian", {}, POST_NORM)])
def test_what_the_split_cannot_follow_is_refused(family, extra, says, tmp_path):
    """GPT-1, TrOCR and an OPT-350m-like OPT add each write to the residual and then norm the sum (post-norm): the
    refusal says so, not that their attention bypasses the capture."""
    m = _load(family, tmp_path, **extra)
    with pytest.raises(UserError, match=says):
        decompose(m, TEXT)


@pytest.mark.parametrize("family", ["gpt2", "gpt_neox"])
def test_a_pruned_export_whose_layers_lost_different_heads_is_refused(family, tmp_path):
    """Head 1 cut out of layer 0 only: its layers hold 3 and 4 heads, which no layer × head grid holds (the stack of
    the layers' heads raised a RuntimeError, shown as a bug)."""
    from models.prune import pruned_copy
    from models.pruned_hf import export

    m = _load(family, tmp_path / "whole")
    export(pruned_copy(m.next_token_model, {0: [1]}), {0: [1]}, str(tmp_path / "pruned"), m.tokenizer)
    pruned = models.load(f"hf:{tmp_path / 'pruned'}")
    ids, _ = pruned.encode(TEXT)
    with pytest.raises(UserError, match=r"layers hold different numbers of heads \(3, 4"):
        components(pruned, ids)
