"""A hybrid, some of whose layers attend and the others not (Jamba's mamba, Qwen3-Next's linear attention, LFM2's
convolutions, MiniMax's lightning attention), is shown by its attending layers alone, numbered L0, L1, ... in order,
with a notice saying which of the model's layers they are (models.layout.attending, models.hf.decoders). Checked on
tiny random models (bench.tiny_any: two layers, one of each kind) against transformers' own eager model: the trace
equals its output_attentions at the attending layers (MiniMax also returns its lightning layer's blocks there, which
are left out), Inside a head's recompute equals the trace, one head gated off equals a private copy whose output
projection (named here by its path) sees that head's slice zeroed, and patching's clean logit difference is a plain
forward's, and direct logit attribution's parts sum to the logit: an attending layer's MLP part holds the layers
without attention after it, and "before L0" those before the first (checked against the model's own hidden states;
Qwen3-Next's heads are read after the sigmoid gate its attention puts on them). The KV cache view measures its
attending layers' keys and values and, apart, its other layers' state; pruned exports are
tests/models/test_pruned_hybrid.py's. A hybrid none of whose layers attends is refused by models.load
(tests/models/test_refused_layouts.py)."""
import copy

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import models
from bench.tiny_any import model_class, save
from experiments.patching import patch_heads
from models import gates, layout
from models.hf.decoders import hybrid_notice
from models.sites import head_sites

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

TEXT, CORRUPT, ANSWER, WRONG, HEAD = "abcab", "abdab", "c", "d", 1
# model_type -> (the attending layer's output projection, its layer of the model, what the other layer is)
HYBRIDS = {"jamba": ("model.layers.1.self_attn.o_proj", 1, "mamba"),
           "qwen3_next": ("model.layers.1.self_attn.o_proj", 1, "linear_attention"),
           "lfm2_moe": ("model.layers.1.self_attn.out_proj", 1, "conv"),
           "minimax": ("model.layers.0.self_attn.o_proj", 0, "linear_attention")}
# the final RMS norm and what its weight is added to: γ = offset + weight (Qwen3-Next's is 1 + weight, as Gemma's)
NORMS = {"jamba": ("model.final_layernorm", 0.0), "lfm2_moe": ("model.embedding_norm", 0.0),
         "minimax": ("model.norm", 0.0), "qwen3_next": ("model.norm", 1.0)}


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, str]:
    return {t: save(t, "causal", tmp_path_factory.mktemp(t) / "m") for t in HYBRIDS}


@pytest.mark.parametrize("model_type", HYBRIDS)
def test_the_attending_layers_are_the_models_own_eager_attention(model_type, folders):
    path, own, other = HYBRIDS[model_type]
    m = models.load("hf:" + folders[model_type])
    assert m.attending == [own] and m.n_layers == 1 and len(m.windows) == 1
    assert f"({model_type} decoder, 1 of its 2 layers attends × 4 heads" in m.label
    assert f"Only 1 of this model's 2 layers attends (its layer {own}, shown as L0); the other one ({other})" in \
        " ".join(m.notices)
    trace = m.attend(TEXT)
    ref = model_class(model_type, "causal").from_pretrained(folders[model_type], attn_implementation="eager").eval()
    with torch.no_grad():
        out = ref(input_ids=m.encode(TEXT)[0], output_attentions=True).attentions
    want = [a for a in out if a.shape[-1] == len(trace.tokens)]      # MiniMax's lightning layer returns other blocks
    assert len(want) == 1 and trace.weights.shape == (1, 4, len(trace.tokens), len(trace.tokens))
    assert float(np.abs(trace.weights[0] - want[0][0].numpy()).max()) <= 1e-6
    inside = m.head_qkv(TEXT, 0, HEAD)
    assert float(np.abs(np.asarray(inside.model_weights) - trace.weights[0, HEAD]).max()) <= 1e-6
    attn = m.model.get_submodule(path.rsplit(".", 1)[0])             # X is what that layer's attention reads:
    d, kv = inside.v.shape[1], m.kv_head_of[HEAD]                     # its own value projection gives the head's V
    w_v = attn.v_proj.weight.detach()[kv * d:(kv + 1) * d].numpy()      # (d, C)
    assert np.abs(inside.x @ w_v.T - inside.v).max() <= 1e-5


@pytest.mark.parametrize("model_type", HYBRIDS)
def test_one_head_gated_off_equals_its_slice_zeroed_and_patching_reads_the_plain_forward(model_type, folders):
    path, _, _ = HYBRIDS[model_type]
    m = models.load("hf:" + folders[model_type])
    sites = head_sites(m.model)
    assert len(sites) == 1 and sites[0].proj is m.model.get_submodule(path) and sites[0].heads == 4
    ref = copy.deepcopy(m.model)
    size = sites[0].head_size

    def zero(module, args):
        x = args[0].clone()                                     # (B, T, H*hs)
        x[..., HEAD * size:(HEAD + 1) * size] = 0
        return (x,) + args[1:]
    ref.get_submodule(path).register_forward_pre_hook(zero)
    ids = m.encode(TEXT)[0]                                     # (1, T)
    with torch.no_grad():
        plain = m.model(input_ids=ids).logits                   # (1, T, V)
        with gates.gated(m.model, gates.mask(gates.head_counts(m.model), {0: [HEAD]})):
            got = m.model(input_ids=ids).logits
        want = ref(input_ids=ids).logits
    assert float((got - want).abs().max()) <= 1e-6 and float((got - plain).abs().max()) > 1e-4
    p = patch_heads(m, TEXT, CORRUPT, ANSWER, WRONG)
    ia, iw = (m.tokenizer.convert_tokens_to_ids(t) for t in (ANSWER, WRONG))
    assert p.scores.shape == (1, 4) and np.isfinite(p.scores).all()
    assert abs(p.clean_diff - float(plain[0, -1, ia] - plain[0, -1, iw])) <= 1e-4


@pytest.mark.parametrize("model_type", NORMS)
def test_direct_logit_attribution_sums_to_the_logit_and_groups_the_layers_without_attention(model_type, folders):
    """Each part is a piece of the model's own residual: "before L0" is what the layers before the first attending
    one added (hidden_states), read through the final RMS norm with its scale frozen, as a plain formula here."""
    from experiments.logit_lens import decompose

    m = models.load("hf:" + folders[model_type])
    d = decompose(m, TEXT)
    ids = m.encode(TEXT)[0]
    with torch.no_grad():
        out = m.model(input_ids=ids, output_hidden_states=True)
    hidden = [h[0, -1].double() for h in out.hidden_states]          # N + 1 of (C,), the last before the final norm
    assert abs(d.total - float(out.logits[0, -1, d.target_id])) <= 1e-4 and len(d.lens) == 1
    assert any("an attending layer's MLP part (L0.mlp, …) here holds the rest of that layer" in n for n in d.notices)
    path, offset = NORMS[model_type]
    norm = m.model.get_submodule(path)                                  # the final RMS norm: γ ⊙ r / rms(r)
    eps = getattr(norm, "variance_epsilon", None) or norm.eps
    s = torch.sqrt((hidden[-1] ** 2).mean() + eps)                      # its scale on this input, frozen
    gamma = offset + norm.weight.detach().double()
    u = m.model.lm_head.weight[d.target_id].detach().double()           # (C,)
    if HYBRIDS[model_type][1] == 0:                                     # MiniMax attends first: nothing before it
        assert "before L0" not in d.parts
    else:
        want = float(u @ (gamma * (hidden[1] - hidden[0]) / s))
        assert abs(d.parts["before L0"] - want) <= 1e-6 and abs(want) > 1e-3, (d.parts["before L0"], want)


def test_the_notice_names_the_models_own_layers():
    from transformers import CONFIG_MAPPING

    cfg = CONFIG_MAPPING["jamba"](num_hidden_layers=8, attn_layer_period=4, attn_layer_offset=3)
    assert layout.attending(cfg) == [3, 7]
    assert hybrid_notice(cfg, [3, 7]) == ("Only 2 of this model's 8 layers attend (its layers 3 and 7, shown as L0 and "
                                          "L1); the other 6 (mamba) have no attention weights, so they have no map "
                                          "and no number here.")


def test_the_views_show_its_attention_and_the_kv_cache_its_attending_layers_keys_beside_the_others_state(folders):
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["text"] = "The cat sat on the mat."
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = folders["qwen3_next"]
    at.run()
    for view in ("views/heads.py", "views/inside_head.py", "views/kv_cache.py"):
        at.switch_page(view).run()
        assert not at.exception and not at.error, (view, [e.value for e in at.error])
        if view == "views/heads.py":
            said = [e.value for e in (*at.info, *at.caption, *at.warning, *at.markdown)]
            assert at.get("plotly_chart") and any("shown as L0" in v for v in said), said
        if view == "views/inside_head.py":  # its one attending layer to pick, and which of the model's it is
            assert list(at.selectbox(key="ih_bert_layer").options) == ["L0"]
            assert any("(its layer 1, shown as L0)" in w.value for w in at.warning)
    assert any(c.value.startswith("A hybrid: its cache holds keys and values for its 1 layer that attends alone")
               for c in at.caption)
    assert any("qwen3_next decoder, 1 of its 2 layers attends" in c.value for c in at.caption)  # its own, no fallback


@pytest.mark.parametrize("model_type", ["jamba", "qwen3_next", "lfm2_moe", "minimax", "nemotron_h"])
def test_the_cache_holds_keys_for_the_attending_layers_and_a_state_that_does_not_grow(model_type, folders, tmp_path):
    """Measured against the formula over the attending layers at every step, and the other layers' state against
    transformers' own cache after one forward of the whole text: the same bytes, whatever the length."""
    from analysis.kv import bytes_cached, kv_bytes_per_token
    from experiments import kv_cache as E

    m = models.load("hf:" + (folders.get(model_type) or save(model_type, "causal", tmp_path / "m")))
    run = E.write(m, "abcdefghij", 6)
    per = kv_bytes_per_token(1, m.kv_heads, m.head_dim, 4)                 # one layer, one position
    assert run.measured == [bytes_cached(t, m.windows, per) for t in run.positions]
    assert run.norms.shape == (2 * m.n_layers, run.positions[-1])
    with torch.no_grad():  # the whole text at once: the cache the model makes itself
        own = m.model(input_ids=torch.tensor([run.prompt + run.written]), use_cache=True).past_key_values
    states = [t for layer in own.layers for t in (*getattr(layer, "conv_states", {}).values(),
                                                  *getattr(layer, "recurrent_states", {}).values()) if t is not None]
    states += [t for t in getattr(own, "linear_cache", ()) if isinstance(t, torch.Tensor)]  # MiniMax's cache
    assert states and run.states == [sum(t.numel() * t.element_size() for t in states)] * len(run.positions)


def test_sinks_and_attribution_read_the_attending_layers_where_the_others_return_weights_of_their_own(folders):
    """MiniMax's lightning layers return blocks of their own through output_attentions: the views' stacks of every
    layer's weights once failed on their shapes."""
    from experiments.explained import explain
    from experiments.sinks import model_sink_mass

    m = models.load("hf:" + folders["minimax"])
    assert model_sink_mass(m, 1, text="abcdefghij " * 4, max_len=16)["windows"] == 1
    weights = explain(m, "abcdefg hijk").attention()                      # (L, H, T, T)
    assert weights.shape[:2] == (1, 4)
    np.testing.assert_allclose(weights[0], m.attend("abcdefg hijk").weights[0], atol=1e-6)


def test_a_model_whose_every_layer_keeps_a_state_beside_attention_is_not_called_a_hybrid(tmp_path):
    """Falcon-H1 runs a mamba beside attention in each layer: every layer attends, and its cache holds both."""
    at = AppTest.from_file("../../app.py", default_timeout=180)
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = save("falcon_h1", "causal", tmp_path / "m")
    at.session_state["kv_hf_tokens"] = 2
    at.run()
    at.switch_page("views/kv_cache.py").run()
    assert not at.exception and not at.error
    said = [c.value for c in at.caption if "does not grow with the text" in c.value]
    assert len(said) == 1 and said[0].startswith("Each of its layers also keeps a state of its own beside its keys")


def test_the_whole_block_names_its_layers_without_attention(folders):
    from models import block
    from ui.next_token import block_sentence

    b = block.of(models.load("hf:" + folders["jamba"]))
    assert b.without == ("mamba",) and b.layers == 2
    said = block_sentence(b, 1, 4)
    assert said.startswith("**embedding** → 2 layers in the model's own order: 1 with attention, each [ norm → "
                           "attention (4 heads") and \
        "and 1 without attention weights (mamba), whose own parts also add to the residual → final norm" in said, said


@pytest.mark.slow  # every view, ~30 s each: the quick group opens Heads, Inside a head and the KV cache above
@pytest.mark.parametrize("model_type", ["jamba", "minimax"])  # MiniMax's other layers return weights of their own
def test_every_view_shows_a_hybrid_or_says_why(model_type, folders, monkeypatch):
    from tests.views.view_at import every_view

    own = HYBRIDS[model_type][1]
    for stem, at in every_view(folders[model_type], monkeypatch):
        if stem in ("heads", "graph", "compare"):
            assert at.get("plotly_chart"), stem
        if stem in ("heads", "graph", "inside_head", "next_token", "patching"):  # which of its layers L0 is
            assert any(f"(its layer {own}, shown as L0)" in w.value for w in at.warning), stem
