"""models.twin and models.residual's first-split check: the twin holds the model's own tensors and takes hooks the
model never sees; the check compares each attention module's output (read on the twin) with the heads' summed
writes, once per model, and refuses in one sentence where they differ."""
import pytest
import torch

import models
from bench.tiny_any import save
from limits.errors import UserError
from models import gates, residual, twin

TEXT = "The cat sat on"


def _load(family: str, tmp_path):
    return models.load("hf:" + save(family, "causal", tmp_path))


def test_the_twin_shares_the_weights_and_keeps_its_hooks(tmp_path):
    lm = _load("qwen3", tmp_path).model
    other = twin.twin(lm)
    assert other is not lm and other.model.layers[0] is not lm.model.layers[0]
    assert all(a is b for a, b in zip(lm.parameters(), other.parameters(), strict=True))
    other.model.layers[0].self_attn.register_forward_hook(lambda m, a, o: None)
    assert not lm.model.layers[0].self_attn._forward_hooks


def test_the_attention_outputs_are_the_modules_own(tmp_path):
    m = _load("qwen3", tmp_path)
    ids, _ = m.encode(TEXT)
    names = [f"model.layers.{i}.self_attn" for i in range(m.n_layers)]
    outs = twin.attention_outputs(m.model, ids, names)
    seen = []
    hook = m.model.model.layers[1].self_attn.register_forward_hook(lambda mod, a, o: seen.append(o[0][0, -1]))
    try:  # a hook on this test's own unshared model, as the reference
        with torch.no_grad():
            m.model(input_ids=ids)
    finally:
        hook.remove()
    torch.testing.assert_close(outs[1], seen[0], rtol=0, atol=0)


def test_the_first_split_checks_the_heads_against_the_modules(tmp_path):
    """A model's first split runs the check once (it is then remembered); the check passes the pieces the split
    found and refuses, naming the module, when one layer's writes miss a head."""
    m = _load("qwen3", tmp_path)
    ids, _ = m.encode(TEXT)
    assert m.model not in residual._CHECKED
    c = residual.components(m, ids)
    assert residual._CHECKED[m.model] is None
    names = [f"model.layers.{i}.self_attn" for i in range(m.n_layers)]
    raw = [c.heads[i].sum(0) + c.attn_bias[i] for i in range(m.n_layers)]   # (C,) each; no post norm or scale here
    other = models.load("hf:" + str(tmp_path))                               # a fresh model, not yet checked
    with torch.no_grad():
        residual._check_once(other.model, ids, names, raw)
    assert residual._CHECKED[other.model] is None
    missing = [raw[0], raw[1] - c.heads[1][0]]                               # layer 1 without head 0's write
    third = models.load("hf:" + str(tmp_path))
    with torch.no_grad(), pytest.raises(UserError, match=r"model\.layers\.1\.self_attn returns more than its heads'"):
        residual._check_once(third.model, ids, names, missing)
    with pytest.raises(UserError, match="returns more than its heads'"):  # remembered for that model
        residual._check_once(third.model, ids, names, raw)


def test_a_norm_inside_the_attention_is_caught(tmp_path, monkeypatch):
    """BitNet norms its heads' concatenated outputs (attn_sub_norm) before its output projection. Were that norm not
    known to the split (models.head_path.projection_norm finding none, as for a norm it does not know), the
    capture's outputs through the projection are not what the module returns, which the logit check alone let pass
    (the layer's remainder absorbed the difference): the twin's check refuses the model."""
    from experiments.logit_lens import decompose
    from models import head_path

    monkeypatch.setattr(head_path, "projection_norm", lambda attn: None)
    m = _load("bitnet", tmp_path)
    with pytest.raises(UserError, match=r"model\.layers\.0\.self_attn returns more than its heads' writes"):
        decompose(m, TEXT)


def test_the_twin_carries_none_of_the_models_hooks(tmp_path):
    m = _load("qwen3", tmp_path)
    gates.install(m)
    hooked = [n for n, mod in m.model.named_modules() if mod._forward_pre_hooks]
    assert hooked                                                            # gates' pre-hooks on the model
    other = twin.twin(m.model)
    assert not any(mod._forward_pre_hooks or mod._forward_hooks for mod in other.modules())
    assert all(m.model.get_submodule(n)._forward_pre_hooks for n in hooked)  # the model keeps its own


def test_a_first_split_inside_a_gates_context_decides_nothing(tmp_path):
    """The first split of a model made with head L0H0 zeroed (its heads are the edited ones) neither refuses nor is
    remembered; a later plain call splits, and is checked."""
    m = _load("qwen3", tmp_path)
    ids, _ = m.encode(TEXT)
    g = torch.ones(m.n_layers, m.n_heads)
    g[0, 0] = 0
    with gates.gated(m, g):
        residual.components(m, ids)
    assert m.model not in residual._CHECKED
    residual.components(m, ids)
    assert residual._CHECKED[m.model] is None
