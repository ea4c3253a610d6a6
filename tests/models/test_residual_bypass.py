"""models.residual on the decoders whose attention bypasses transformers' registry (models.bypass: Falcon in its four
layouts and with ALiBi, GPT-J, BLOOM, MPT with clipped QKV, CodeGen, GPT-Neo with a local layer, XGLM,
GPT-NeoX-Japanese with its last layer's bias): each layer's heads' summed write is what the attention module adds to
the residual, taken by a hook written here on a private copy; the residual rebuilt from the pieces is what the final
norm reads; the logit split sums to the model's own logit. What the split cannot follow is refused in one sentence."""
import copy

import pytest
import torch

import models
from bench.tiny_any import save
from experiments.logit_lens import decompose
from limits.errors import UserError
from models.residual import components, why_not
from tests.models.test_residual_any_family import pieces_are

TEXT = "The cat sat on"
# the names this test reads, written per family here (not asked of models/): the layers, each layer's attention
# module, the final norm
LAYERS = {"mpt": "transformer.blocks", "xglm": "model.layers", "gpt_neox_japanese": "gpt_neox_japanese.layers"}
ATTENTION = {"falcon": "self_attention", "bloom": "self_attention", "xglm": "self_attn",
             "gpt_neox_japanese": "attention"}
NORM = {"mpt": "transformer.norm_f", "xglm": "model.layer_norm",
        "gpt_neox_japanese": "gpt_neox_japanese.final_layer_norm"}
CASES = [("falcon", {}), ("falcon", {"multi_query": False}), ("falcon", {"parallel_attn": False}),
         ("falcon", {"new_decoder_architecture": True, "num_kv_heads": 2}), ("falcon", {"alibi": True}),
         ("gptj", {}), ("bloom", {}), ("mpt", {}), ("mpt", {"attn_config": {"clip_qkv": 0.05}}), ("codegen", {}),
         ("gpt_neo", {}), ("xglm", {}), ("gpt_neox_japanese", {})]


def _load(family: str, tmp_path, **extra):
    """A tiny random model; GPT-NeoX-Japanese's last-layer bias (dense_bias, zeros as built) drawn at random, so the
    cases meet a bias the layer adds after its attention module."""
    m = models.load("hf:" + save(family, "causal", tmp_path, **extra))
    if family == "gpt_neox_japanese":
        with torch.no_grad():
            m.model.gpt_neox_japanese.layers[-1].attention.dense_bias.copy_(torch.randn(m.config.hidden_size))
    return m


def _write(family: str, args: tuple, output) -> torch.Tensor:
    """What an attention module's call adds to the residual at the last position (C,): its output, less the residual
    BLOOM's attention takes as its second argument and adds itself, plus the bias GPT-NeoX-Japanese's returns third
    for its layer to add."""
    out = output[0][0, -1]
    if family == "gpt_neox_japanese" and output[2] is not None:
        return out + output[2]
    return out - args[1][0, -1] if family == "bloom" else out


def _hooked(lm, family: str):
    """On a copy: each layer's attention write at the last position, and the final norm's input there."""
    copy_ = copy.deepcopy(lm)
    writes, read = [], []
    for layer in copy_.get_submodule(LAYERS.get(family, "transformer.h")):
        layer.get_submodule(ATTENTION.get(family, "attn")).register_forward_hook(
            lambda m, args, out: writes.append(_write(family, args, out)))
    copy_.get_submodule(NORM.get(family, "transformer.ln_f")).register_forward_pre_hook(
        lambda m, args: read.append(args[0][0, -1]))
    return copy_, writes, read


@pytest.mark.parametrize("family, extra", CASES)
def test_the_pieces_are_the_models_own_writes(family, extra, tmp_path):
    m = _load(family, tmp_path, **extra)
    assert why_not(m) is None
    ids, _ = m.encode(TEXT)
    c = components(m, ids)
    copy_, writes, read = _hooked(m.model, family)
    logits = pieces_are(c, copy_, ids, writes, read, m.n_layers)
    assert c.heads.shape[1] == m.n_heads
    d = decompose(m, TEXT)
    own = float(logits[d.target_id])
    assert d.heads.shape == (m.n_layers, m.n_heads)
    assert abs(d.total - own) < 1e-4
    assert abs(d.logit - own) < 1e-5


def test_the_variants_are_the_configs(tmp_path):
    """The cases above meet what they are named for: grouped key/value heads in Falcon's new architecture, a clip
    that clamps MPT's QKV on this text, and a local layer in GPT-Neo."""
    from bench.tiny_any import config

    assert config("falcon", new_decoder_architecture=True, num_kv_heads=2).num_kv_heads == 2
    assert config("gpt_neo").attention_layers == ["global", "local"]
    m = _load("mpt", tmp_path, attn_config={"clip_qkv": 0.05})
    block = m.model.transformer.blocks[0]
    ids, _ = m.encode(TEXT)
    with torch.no_grad():
        assert block.attn.Wqkv(block.norm_1(m.model.transformer.wte(ids))).abs().max() > 0.05


def test_a_residual_after_the_norm_is_refused(tmp_path):
    m = _load("bloom", tmp_path, apply_residual_connection_post_layernorm=True)
    with pytest.raises(UserError, match="apply_residual_connection_post_layernorm"):
        decompose(m, TEXT)


def test_the_split_checks_itself_against_the_models_residual(tmp_path):
    """A layout the readers do not follow is caught by the split's own check, even past the config's refusal:
    BLOOM adding its layers' outputs to the normed input reads as a layer adding more than its heads and MLP."""
    from models.residual import _bypassed

    m = _load("bloom", tmp_path, apply_residual_connection_post_layernorm=True)
    ids, _ = m.encode(TEXT)
    with torch.no_grad(), pytest.raises(UserError, match="layer 0 adds to the residual more than its heads and MLP"):
        _bypassed(m, ids)


BF16 = 4 * 2.0 ** -8   # a bfloat16 sum in another order: a few units of its rounding, of the sum's own length


@pytest.mark.parametrize("family", ["falcon", "gptj", "bloom", "xglm", "gpt_neox_japanese"])
def test_bfloat16_is_split_within_its_rounding(family, tmp_path, bfloat16_here):
    """In bfloat16 each layer's heads summed in another order are the attention module's own write (a hook on a copy)
    within a few units of its rounding, of that write's length, and the parts still add up to the logit."""
    m = models.load("hf:" + save(family, "causal", tmp_path), dtype="bfloat16")
    assert m.dtype == "bfloat16"
    ids, _ = m.encode(TEXT)
    c = components(m, ids)
    copy_, writes = copy.deepcopy(m.model), []
    for layer in copy_.get_submodule(LAYERS.get(family, "transformer.h")):
        attn = layer.get_submodule(ATTENTION.get(family, "attn"))   # BLOOM's adds the residual, whose rounding in
        attn = attn.dense if family == "bloom" else attn            # bfloat16 is as large as its write: read its dense
        attn.register_forward_hook(lambda m, a, out: writes.append((out[0] if isinstance(out, tuple) else out)[0, -1]))
    with torch.no_grad():
        copy_(input_ids=ids)
    assert len(writes) == m.n_layers
    for layer, w in enumerate(writes):
        rebuilt = c.heads[layer].sum(0) + c.attn_bias[layer]          # (C,)
        assert float((rebuilt - w).double().norm()) <= BF16 * float(w.double().norm()), layer
    d = decompose(m, TEXT)
    assert abs(d.total - d.logit) < 8 * torch.finfo(torch.bfloat16).eps * max(1.0, abs(d.logit))


@pytest.mark.parametrize("family", ["falcon", "gptj", "bloom", "xglm", "gpt_neox_japanese"])
def test_a_split_missing_a_head_is_refused_in_bfloat16(family, tmp_path, monkeypatch, bfloat16_here):
    """A head's write is small next to the residual (BLOOM's whole attention is ~0.4% of it here), so the residual's
    check alone passed a split without one in bfloat16: each layer's heads are also checked against the attention
    module's own output. Head 0's values are zeroed by this test's own reader (the shared model is not touched)."""
    import dataclasses

    from models import bypass

    read = bypass.layer

    def without_head_0(lm, kind, index, h):
        p = read(lm, kind, index, h)
        values = p.values.clone()                                     # (H, T, hd)
        values[0] = 0
        return dataclasses.replace(p, values=values)

    m = models.load("hf:" + save(family, "causal", tmp_path), dtype="bfloat16")
    assert m.dtype == "bfloat16"
    ids, _ = m.encode(TEXT)
    monkeypatch.setattr(bypass, "layer", without_head_0)
    refused = r"adds to the residual more than its heads|returns more than its heads' writes"
    with pytest.raises(UserError, match=refused):
        components(m, ids)
