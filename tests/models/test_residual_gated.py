"""models.residual on decoders that gate each head's output (AFMoE, AXK2, Laguna) or end in a final norm whose module
does not say what it computes (Nemotron's weight + 1, OLMo's and NanoChat's without parameters).

Checked against hooks written here on a private deep copy: each head's write is W_O[:, h] times what the output
projection reads for that head at the last position (after the gate), with AFMoE's norm on the attention's output
frozen at that output (its output over its input, channel by channel); the logit split sums to the plain forward's
logit. What the split cannot follow (a residual scaled at every layer, several residual streams, a mix of earlier
blocks, layers run in cycles, a final norm that is not a LayerNorm or RMS norm) is refused in one sentence."""
import copy

import pytest
import torch

import models
from bench.tiny_any import config, save
from experiments.logit_lens import decompose
from limits.errors import UserError
from models.final_norm import params, plain, says
from models.residual import components

TEXT = "The cat sat on"
GATED = ("afmoe", "axk2", "laguna")
NORMS = ("nemotron", "olmo", "nanochat")
SANDWICH = {"afmoe": "post_attention_layernorm"}  # the layer norms its attention's output with this before adding it


def _load(family: str, tmp_path):
    return models.load("hf:" + save(family, "causal", tmp_path))


def _reference(lm, family: str, ids: torch.Tensor, H: int) -> tuple[torch.Tensor, torch.Tensor]:
    """On a deep copy with hooks: each layer's heads' writes (L, H, C) from what its o_proj reads, and the last
    logits (V,) of the plain forward."""
    other = copy.deepcopy(lm)
    reads, factors = [], []
    for layer in other.model.layers:
        layer.self_attn.o_proj.register_forward_hook(lambda m, args, out: reads.append((m.weight, args[0][0, -1])))
        if family in SANDWICH:
            layer.get_submodule(SANDWICH[family]).register_forward_hook(
                lambda m, args, out: factors.append(out[0, -1] / args[0][0, -1]))     # (C,) γ / rms, frozen
    with torch.no_grad():
        logits = other(input_ids=ids).logits[0, -1]                                    # (V,)
    writes = []
    for i, (w_o, z) in enumerate(reads):
        per = torch.stack([w_o[:, h * (z.numel() // H):(h + 1) * (z.numel() // H)] @ z.view(H, -1)[h]
                           for h in range(H)])                                         # (H, C)
        writes.append(per * factors[i] if factors else per)
    return torch.stack(writes), logits


@pytest.mark.parametrize("family", GATED + NORMS)
def test_each_heads_write_and_the_sum_are_the_models(family, tmp_path):
    m = _load(family, tmp_path)
    ids, _ = m.encode(TEXT)
    c = components(m, ids)
    want, logits = _reference(m.model, family, ids, m.n_heads)
    assert c.heads.shape == want.shape == (m.n_layers, m.n_heads, c.embed.shape[0])
    torch.testing.assert_close(c.heads, want, rtol=1e-4, atol=1e-5)
    d = decompose(m, TEXT)
    assert abs(sum(d.parts.values()) - float(logits[d.target_id])) < 1e-4
    assert abs(d.logit - float(logits[d.target_id])) < 1e-4


def test_the_gate_is_what_the_capture_misses(tmp_path):
    """Without its gate the heads' writes would differ: the capture's record (before the gate) is not the read."""
    from models import capture

    m = _load("laguna", tmp_path)
    ids, _ = m.encode(TEXT)
    with torch.no_grad(), capture.recording(m.model) as calls:
        m.model(input_ids=ids)
    c = components(m, ids)
    w_o = m.model.model.layers[0].self_attn.o_proj.weight                               # (C, H * d_v)
    ungated = w_o @ calls[0].output[0, :, -1].reshape(-1)                               # (C,)
    assert not torch.allclose(ungated, c.heads[0].sum(0), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("family, says", [("beam", "depth-scaled residual add"), ("hy_v4", "hyper-connections"),
                                          ("inkling2_text", "block attention residuals"),
                                          ("hrm_text", "more than once for each token")])
def test_what_the_split_cannot_follow_is_refused(family, says, tmp_path):
    m = _load(family, tmp_path)
    with pytest.raises(UserError, match=says):
        decompose(m, TEXT)


def test_a_final_norm_that_is_no_layer_or_rms_norm_is_refused():
    """AXK2's gated RMS norm (y · sigmoid(mlp(y))) is not a scale and a shift of its input: nothing rebuilds it."""
    from transformers.models.axk2.modeling_axk2 import AXK2GatedRMSNorm

    torch.manual_seed(0)
    norm = AXK2GatedRMSNorm(config("axk2"))
    with pytest.raises(UserError, match="not a LayerNorm or RMS norm"):
        plain(norm, torch.randn(norm.norm.weight.shape[0]))


def _as_split_reads(read: tuple, x: torch.Tensor) -> torch.Tensor:
    """x (C,) through a norm read as (γ, β, ε, centres), as analysis.direct_logit applies it to the whole residual."""
    gamma, beta, eps, centre = read
    x = x.double() - (x.double().mean() if centre else 0.0)                     # (C,)
    y = x / (x.pow(2).mean() + eps) ** 0.5 * gamma.double()                     # (C,)
    return y if beta is None else y + beta.double()


@torch.no_grad()
def test_the_split_reads_a_final_norm_once_and_right():
    """models.final_norm.params is the split's one reading of a final norm (experiments.logit_lens asks it), of a norm
    that says what it computes or of plain()'s rebuild of one that does not. Gemma's RMS norm scales by (1 + weight):
    read off its outputs, γ is 1 + weight, not its `weight`. Nemotron's LayerNorm1P (weight + 1) and OLMo's
    LayerNorm (no parameters, ε 1e-5 kept nowhere) do not say: read raw they would be misread (γ = weight, ε = 1e-6),
    so the split reads plain()'s rebuild, whose reading is right: the norm's own output."""
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
    from transformers.models.nemotron.modeling_nemotron import NemotronLayerNorm1P
    from transformers.models.olmo.modeling_olmo import OlmoLayerNorm

    torch.manual_seed(0)
    x = torch.randn(64) * 3 + 1                                                   # (C,)
    gemma, nemotron = GemmaRMSNorm(64), NemotronLayerNorm1P(64)
    with torch.no_grad():
        for p in (gemma.weight, nemotron.weight, nemotron.bias):
            p.normal_(0, 0.5)
    assert says(gemma) and plain(gemma, x) is gemma
    gamma, beta, eps, centre = read = params(gemma)
    assert (beta, eps, centre) == (None, 1e-6, False)
    assert torch.allclose(gamma, 1 + gemma.weight, atol=1e-6) and not torch.allclose(gamma, gemma.weight, atol=0.1)
    assert torch.allclose(_as_split_reads(read, x), gemma(x).double(), atol=1e-5)
    for norm, want_gamma in ((nemotron, nemotron.weight + 1), (OlmoLayerNorm(64), torch.ones(64))):
        assert not says(norm)
        gamma, beta, eps, centre = read = params(plain(norm, x))
        assert centre and eps == 1e-5 and torch.allclose(gamma, want_gamma, atol=1e-5)
        small = x * 1e-3                                                          # (C,) variance ~ ε: ε counts
        for r in (x, small):
            assert torch.allclose(_as_split_reads(read, r), norm(r).double(), atol=1e-5)
        assert not torch.allclose(_as_split_reads(params(norm), small), norm(small).double(), atol=1e-3)  # read raw


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_a_trained_layernorm1p_is_rebuilt_in_every_precision(dtype):
    """Nemotron's LayerNorm1P (γ = weight + 1) with weights far from their init: the rebuilt torch LayerNorm gives its
    output up to the dtype's rounding (γ read off a half-precision output is rounded as it is); the AXK2 norm above
    stays refused in half precision too."""
    from transformers.models.axk2.modeling_axk2 import AXK2GatedRMSNorm
    from transformers.models.nemotron.modeling_nemotron import NemotronLayerNorm1P

    torch.manual_seed(0)
    norm = NemotronLayerNorm1P(64)
    with torch.no_grad():
        norm.weight.normal_(0, 0.5)
        norm.bias.normal_(0, 0.3)
    norm = norm.to(dtype)
    x = torch.randn(64, dtype=dtype) * 3 + 1
    made = plain(norm, x)
    assert type(made) is torch.nn.LayerNorm
    want = norm(x).double()
    assert float((made(x).double() - want).norm()) <= 2 * torch.finfo(dtype).eps * float(want.norm()) + 1e-4
    gated = AXK2GatedRMSNorm(config("axk2")).to(dtype)
    with pytest.raises(UserError, match="not a LayerNorm or RMS norm"):
        plain(gated, torch.randn(gated.norm.weight.shape[0], dtype=dtype))


@pytest.mark.parametrize("module, says", [("beam", "depth-scaled residual add"), ("hy_v4", "hyper-connections"),
                                          ("inkling2", "block attention residuals"),
                                          ("hrm_text", "more than once for each token"),
                                          ("qwen4_exp", "hyper-connections"), ("gemma3n", "AltUp"),
                                          ("laguna", None), ("afmoe", None), ("axk2", None)])
def test_the_table_reads_the_same_refusals_from_the_modeling_source(module, says):
    """models.supported()'s Next token column (models.architectures) loads no model: it reads the modeling file."""
    import importlib
    import inspect

    from models.head_path import unsplittable_source

    source = inspect.getsource(importlib.import_module(f"transformers.models.{module}.modeling_{module}"))
    got = unsplittable_source(module, source)
    assert got is None if says is None else says in got
