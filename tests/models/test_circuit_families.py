"""models.circuit_families' layouts (Qwen3, OPT, Phi-3, Gemma 1 to 3, GPT-J, Falcon, and Mixtral, Qwen3-MoE and OLMo
taken as Llama by their modules' names) on tiny random models
(bench.tiny_any) whose weights are spread wider than at init, so attention is far from uniform: the pieces run end to
end rebuild the model's own logits at every position, one edge patched through experiments.circuits equals the same
edge patched by hooks written here on the transformers model (Gemma 2's and 3's head writes as their shares of the
attention's norm, whose formula is written here), and what the layouts do not redo is refused in one sentence (a
family named as Llama but computing more: by its pieces missing its logits).
"""
import functools

import numpy as np
import pytest
import torch

import models
from bench.tiny_any import build, tokenizer
from experiments.circuits import edge_scores, graph
from models.circuit_families import Llama
from models.circuit_layouts import layout

PAIR = ("When Mary met John, John gave a cup to", "When John met Mary, Mary gave a cup to", "M", "J")
# what each family's tiny model needs beyond bench.tiny_any's config: Phi-3 without its 3-token sliding window and
# with rotary on half of each head (as Phi-4-mini); Qwen3 with biases on its projections; Gemma 2 and 3 with windows
# longer than the pair, Gemma 2 with a cap on its scores that bites, Gemma 3 with a sliding layer (its local RoPE) and
# a full one (its global RoPE)
EXTRA = {"qwen3": dict(attention_bias=True), "opt": {}, "gemma": {}, "mixtral": dict(sliding_window=None),
         "deepseek_v3": dict(q_lora_rank=None),  # its query through q_proj, as DeepSeek-V2-Lite's (Mistral 4: LoRA)
         "phi3": dict(sliding_window=None, partial_rotary_factor=0.5),
         "gemma2": dict(sliding_window=64, attn_logit_softcapping=1.0),
         "gemma3_text": dict(sliding_window=64, layer_types=["sliding_attention", "full_attention"])}
# decoders of other names whose modules are Llama's (models.circuit_layouts.by_shape): experts (Mixtral; Qwen3-MoE
# with q/k norms), a norm without weights (OLMo), multi-head latent attention (DeepSeek-V3)
BY_SHAPE = ("mixtral", "qwen3_moe", "olmo", "deepseek_v3")
BARE_OPT = dict(_remove_final_layer_norm=True, enable_bias=False)  # no final norm, no biases anywhere
LATENT = ("deepseek_v3", "mistral4")  # multi-head latent attention (models.circuit_latent)
PARTS = {k: dict(blocks="model.layers", ln1="input_layernorm", q="self_attn.q_proj", o="self_attn.o_proj",
                 ln2="post_attention_layernorm", mlp="mlp", final="model.norm")
         for k in ("qwen3", "gemma", *BY_SHAPE)}
PARTS["phi3"] = {**PARTS["qwen3"], "q": "self_attn.qkv_proj"}  # q heads first in the fused rows
for k in LATENT:  # latent attention: a value patched through the latent (kv), Mistral 4's query through its LoRA
    PARTS[k] = {**PARTS["qwen3"], "kv": ("self_attn.kv_a_proj_with_mqa", "self_attn.kv_a_layernorm",
                                         "self_attn.kv_b_proj")}
PARTS["mistral4"] |= {"q": "self_attn.q_b_proj", "q_in": ("self_attn.q_a_proj", "self_attn.q_a_layernorm")}
for k in ("gemma2", "gemma3_text"):  # sandwich norms: the attention's output normed (post), the MLP's write its norm's
    PARTS[k] = {**PARTS["qwen3"], "ln2": "pre_feedforward_layernorm", "mlp": "post_feedforward_layernorm",
                "post": "post_attention_layernorm"}
PARTS["gptj"] = dict(blocks="transformer.h", ln1="ln_1", q="attn.q_proj", o="attn.out_proj", ln2="ln_1", mlp="mlp",
                     final="transformer.ln_f", parallel=True)  # the MLP reads ln_1 of the layer's input, as the heads
PARTS["falcon"] = dict(blocks="transformer.h", ln1="input_layernorm", q="self_attention.query_key_value",
                       o="self_attention.dense", ln2="input_layernorm", mlp="mlp", final="transformer.ln_f",
                       parallel=True)  # multi-query: every query head's rows first in the fused projection
PARTS["opt"] = dict(blocks="model.decoder.layers", ln1="self_attn_layer_norm", q="self_attn.q_proj",
                    o="self_attn.out_proj", ln2="final_layer_norm", mlp="fc2", final="model.decoder.final_layer_norm")

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py


def _save(kind: str, folder, **extra) -> str:
    """A tiny random `kind` decoder with every weight moved by N(0, 0.3²), saved with its tokenizer."""
    model = build(kind, "causal", **{**EXTRA.get(kind, {}), **extra})
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    model.save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    made = {}

    def get(kind: str, **extra):
        key = (kind, *sorted(extra))
        if key not in made:
            made[key] = models.load("hf:" + _save(kind, tmp_path_factory.mktemp(kind), **extra))
        return made[key]
    return get


def _pieces(lay, ids: torch.Tensor) -> torch.Tensor:
    """The layout's pieces end to end, every head reading the same residual: ids (1, T) -> logits (T, V). A parallel
    layout's MLP reads the layer's input, not its heads' writes."""
    x = lay.embed(ids)                                                      # (1, T, C)
    T = ids.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()                      # (T, T)
    for layer in range(lay.n_layers):
        xs, x_in = x[:, None].expand(-1, lay.n_heads, -1, -1), x           # (1, H, T, C), (1, T, C)
        q, k, v = lay.qkv(layer, xs, xs, xs)                                # (1, H, T, hd) each
        scores = q @ k.transpose(-2, -1) * lay.scale(layer)                  # (1, H, T, T)
        if lay.softcap(layer) is not None:                                  # Gemma 2's cap on its scores
            scores = lay.softcap(layer) * torch.tanh(scores / lay.softcap(layer))
        scores = scores.masked_fill(~causal, float("-inf"))                 # (1, H, T, T)
        x = x + lay.write(layer, torch.softmax(scores, -1) @ v).sum(1)      # (1, T, C)
        if lay.bias(layer) is not None:
            x = x + lay.bias(layer)
        x = x + lay.mlp(layer, x_in if lay.parallel else x)
    return lay.logits(x[0])                                                 # (T, V)


def _own(m, text: str) -> tuple[torch.Tensor, torch.Tensor]:
    ids = m.encode(text)[0]                                                 # (1, T)
    with torch.no_grad():
        return ids, m.model(input_ids=ids).logits[0]                        # (T, V)


@pytest.mark.parametrize(("kind", "extra"), [("qwen3", {}), ("opt", {}), ("opt", BARE_OPT), ("phi3", {}),
                                             ("gemma", {}), ("gemma2", {}), ("gemma3_text", {}), ("gptj", {}),
                                             ("falcon", {}),
                                             ("falcon", dict(multi_query=False, parallel_attn=False, bias=True)),
                                             ("falcon", dict(new_decoder_architecture=True, num_kv_heads=2)),
                                             *((k, {}) for k in BY_SHAPE), ("mistral4", {}),
                                             ("deepseek_v3", dict(rope_interleave=False))])  # its plain RoPE
def test_the_pieces_end_to_end_are_the_models_own_logits(kind, extra, tiny):
    m = tiny(kind, **extra)
    ids, want = _own(m, PAIR[0])
    with torch.no_grad():
        got = _pieces(layout(m, ids.shape[1]), ids)
    assert want.std() > 0.5  # weights spread wide enough that every piece shows in the logits
    # 3e-5 for logits up to 10 (every model with a final norm here; OLMo's norms, without weights and computed in
    # float32, reach 2e-5, and stay 3e-6 apart with the model in float64), proportionally more for the 100s of OPT
    # without one: float32 rounding grows with the logits; a piece left out is 1e-2 or more away (below)
    assert float((got - want).abs().max()) < 3e-5 * max(1.0, float(want.abs().max()) / 10)


@pytest.mark.parametrize("kind", ["qwen3", "opt", "gptj", "gemma2", "gemma3_text"])
def test_a_piece_left_out_is_seen(kind, tiny):
    """Qwen3 read as a plain Llama (no q_norm / k_norm), OPT with its q scaled twice, GPT-J's MLP reading its heads'
    writes (not parallel), Gemma 2 without its scores' cap, Gemma 3 with one RoPE for both its layers: far from the
    model's logits."""
    m = tiny(kind)
    ids, want = _own(m, PAIR[0])
    lay = Llama(m) if kind == "qwen3" else layout(m, ids.shape[1])
    if kind == "gemma2":
        lay.softcap = lambda layer: None
    if kind == "gemma3_text":
        lay.rotary = lambda layer, x, positions: lay.base.rotary_emb(x, positions, "full_attention")
    if kind == "opt":
        lay.scale = lambda layer: m.head_dim ** -0.5
    if kind == "gptj":
        lay.parallel = False
    with torch.no_grad():
        assert float((_pieces(lay, ids) - want).abs().max()) > 1e-2


def _hooked(m, kind: str, ids: torch.Tensor, delta: dict[str, torch.Tensor]):
    """Run the transformers model on ids (1, T) with delta[receiver] (T, C) added to that receiver's input: a head's
    query (its q rows recomputed from the layer's input + delta), an MLP's norm, the final norm.
    -> (logits (V,) at the last position, sender writes {name: (T, C)})."""
    parts, ref, H = PARTS[kind], m.model, m.n_heads
    attn = ref.get_submodule(parts["blocks"])[0].get_submodule(parts["o"].rsplit(".", 1)[0])
    qd, hd = getattr(attn, "qk_head_dim", m.head_dim), getattr(attn, "v_head_dim", m.head_dim)  # latent's: its own
    x, writes, hooks = {}, {}, []

    def on_block(layer):
        def hook(mod, args, kwargs):
            x[layer] = args[0] if args else kwargs["hidden_states"]        # (1, T, C)
            if layer == 0:
                writes["embed"] = x[0][0]
        return hook

    def on_q(layer, norm):
        def hook(mod, inp, out):
            out = out.clone()
            for h in range(H):
                if f"L{layer}H{h}.q" in delta:
                    patched = mod.forward(norm(x[layer] + delta[f"L{layer}H{h}.q"]))
                    out[..., h * qd:(h + 1) * qd] = patched[..., h * qd:(h + 1) * qd]
            return out
        return hook

    def on_o(layer):
        def hook(mod, args):
            z = args[0].reshape(-1, H * hd)                                 # (T, H * hd)
            for h in range(H):
                writes[f"L{layer}H{h}"] = z[:, h * hd:(h + 1) * hd] @ mod.weight[:, h * hd:(h + 1) * hd].T
        return hook

    def on_post(layer):  # Gemma's RMSNorm, x · (1 + w) / √(mean(x²) + ε), on the heads' sum: each head's share
        def hook(mod, args):
            total = args[0][0]                                              # (T, C)
            factor = (1 + mod.weight) / (total.pow(2).mean(-1, keepdim=True) + mod.eps).sqrt()  # (T, C)
            for h in range(H):
                writes[f"L{layer}H{h}"] = writes[f"L{layer}H{h}"] * factor
        return hook

    def on_v(layer, ln1, down, down_norm):  # kv_b_proj's output (1, 1, T, H · (nope + v)): head h's value columns
        def hook(mod, inp, out):                  # recomputed through the latent from the layer's input + delta
            out = out.clone()
            nope, rank = attn.qk_nope_head_dim, attn.kv_lora_rank
            for h in range(H):
                if f"L{layer}H{h}.v" in delta:
                    patched = mod.forward(down_norm(down(ln1(x[layer] + delta[f"L{layer}H{h}.v"]))[..., :rank]))
                    cols = slice(h * (nope + hd) + nope, (h + 1) * (nope + hd))
                    out[..., cols] = patched[..., cols]
            return out
        return hook

    def on_mlp(layer, norm):
        return lambda mod, args: (norm(x[layer] + delta.get(f"L{layer}.mlp", 0)),)

    for layer, block in enumerate(ref.get_submodule(parts["blocks"])):
        hooks.append(block.register_forward_pre_hook(on_block(layer), with_kwargs=True))
        ln1 = block.get_submodule(parts["ln1"])
        q_in = [block.get_submodule(n) for n in parts.get("q_in", ())]   # a LoRA query: down, its norm
        hooks.append(block.get_submodule(parts["q"]).register_forward_hook(
            on_q(layer, lambda z, ln1=ln1, q_in=q_in: functools.reduce(lambda t, f: f(t), q_in, ln1(z)))))
        if "kv" in parts:
            hooks.append(block.get_submodule(parts["kv"][2]).register_forward_hook(
                on_v(layer, ln1, *(block.get_submodule(n) for n in parts["kv"][:2]))))
        hooks.append(block.get_submodule(parts["o"]).register_forward_pre_hook(on_o(layer)))
        if "post" in parts:
            hooks.append(block.get_submodule(parts["post"]).register_forward_pre_hook(on_post(layer)))
        if parts.get("parallel"):  # the MLP's own norm of the layer's input (the heads' norm is left as it is)
            hooks.append(block.get_submodule(parts["mlp"]).register_forward_pre_hook(
                on_mlp(layer, block.get_submodule(parts["ln2"]))))
        else:
            hooks.append(block.get_submodule(parts["ln2"]).register_forward_pre_hook(
                lambda mod, args, layer=layer: (args[0] + delta.get(f"L{layer}.mlp", 0),)))
        hooks.append(block.get_submodule(parts["mlp"]).register_forward_hook(
            lambda mod, inp, out, layer=layer:   # a copy: Falcon adds its heads' output to it in place afterwards
            writes.__setitem__(f"L{layer}.mlp", out.reshape(-1, out.shape[-1]).clone())))
    hooks.append(ref.get_submodule(parts["final"]).register_forward_pre_hook(
        lambda mod, args: (args[0] + delta.get("logits", 0),)))
    try:
        with torch.no_grad():
            logits = ref(input_ids=ids).logits[0, -1]                       # (V,)
    finally:
        for h in hooks:
            h.remove()
    return logits, writes


@pytest.mark.parametrize("kind", ["qwen3", "opt", "phi3", "gemma", "gemma2", "gemma3_text", "gptj", "falcon",
                                  *BY_SHAPE, "mistral4"])
def test_patching_one_edge_equals_patching_it_by_hand(kind, tiny):
    """Latent attention (DeepSeek-V3, Mistral 4 with its LoRA query) also into a head's value, through the latent."""
    m = tiny(kind)
    g = graph(2, 4, True, parallel=bool(PARTS[kind].get("parallel")))
    receivers = ("L1H2.q", "L1.mlp", "logits", "L0.mlp", *(("L1H2.v",) if kind in LATENT else ()))
    edges = [(s, r) for s in ("embed", "L0H1", "L0.mlp", "L1H0") for r in receivers
             if g.allowed[g.senders.index(s), g.receivers.index(r)]]
    E = edge_scores(m, [PAIR], method="patching", edges=edges)
    assert list(zip(E.sender, E.receiver)) == edges
    clean, corrupt = (m.encode(t)[0] for t in PAIR[:2])
    a, w = (m.tokenizer.convert_tokens_to_ids(t) for t in PAIR[2:])
    base, w_clean = _hooked(m, kind, clean, {})
    _, w_corrupt = _hooked(m, kind, corrupt, {})
    expected = []
    for s, r in edges:
        patched, _ = _hooked(m, kind, clean, {r: w_corrupt[s] - w_clean[s]})
        expected.append(float(patched[a] - patched[w]) - float(base[a] - base[w]))
    assert np.abs(expected).max() > 1e-2
    # a difference of two float32 logits: exact up to rounding, which rtol alone would not allow
    np.testing.assert_allclose(E.score, expected, rtol=1e-3, atol=1e-5)


def test_a_layout_taken_by_its_modules_names_is_checked_against_the_models_logits(tmp_path):
    """Mixtral is traced as Llama by its modules' names (by_shape); GLM-4's extra norm on each attention output, a
    Granite's residual multiplier and MiniCPM3's scaled embeddings and residual keep the same names, and its pieces
    then miss the model's logits: refused in one sentence before any edge is scored, never drawn."""
    from experiments.circuits import check

    lay = layout(models.load("hf:" + _save("mixtral", tmp_path / "mixtral")), 12)
    assert lay.by_shape == "mixtral" and type(lay) is Llama
    for kind, extra in (("glm4", {}), ("granite", dict(residual_multiplier=0.5)), ("minicpm3", {})):  # MiniCPM3:
        # latent attention, but its embeddings and residual scaled (scale_emb, scale_depth)
        m = models.load("hf:" + _save(kind, tmp_path / kind, **extra))
        assert layout(m, 12).by_shape == kind                                # the names alone would take it
        with pytest.raises(ValueError, match=rf"^This model \({kind}\) has modules named as Llama's \(or as "
                                             r"DeepSeek-V3's latent attention\), but the pieces taken for them do not "
                                             r"rebuild its logits \(they are up to [1-9][\d.]*% of its largest"):
            check(m, [PAIR])
        with pytest.raises(ValueError, match="has modules named as Llama's"):
            edge_scores(m, [PAIR])


def test_the_check_of_a_layout_by_name_keeps_no_verdict_under_gates_and_wants_float32(tmp_path):
    """Under head gates the model's forward is gated and the pieces are not: nothing is checked or kept there, so
    the model is not refused afterwards for every visitor. In bfloat16 the check's rounding (~1e-3) would hide a piece
    left out: refused in one sentence, never passed."""
    from experiments.circuits import check
    from models.gates import gated, head_counts, mask

    folder = _save("mixtral", tmp_path / "m")
    m = models.load("hf:" + folder)
    with gated(m.model, mask(head_counts(m.model), {0: [0, 1, 2]})):
        check(m, [PAIR])                                                     # not checked: the forward is gated
    check(m, [PAIR])                                                         # checked here, and passes
    half = models.load("hf:" + folder, dtype="bfloat16")
    with pytest.raises(ValueError, match="bfloat16 rounds too coarsely to tell a piece left out: pick float32"):
        check(half, [PAIR])


@pytest.mark.parametrize(("kind", "extra", "said"), [
    ("opt", dict(do_layer_norm_before=False), "do_layer_norm_before=False"),
    ("opt", dict(word_embed_proj_dim=16), "projects its embeddings in and out"),
    ("phi3", dict(sliding_window=3), "longer than the model's 3-token sliding window"),
    ("gemma2", dict(sliding_window=64, attention_bias=True), "adds a bias to its attention's output before norming"),
    ("falcon", dict(alibi=True), "adds ALiBi's bias to its scores"),
])
def test_what_the_layouts_do_not_redo_is_refused_in_one_sentence(kind, extra, said, tmp_path):
    m = models.load("hf:" + _save(kind, tmp_path, **extra))
    with pytest.raises(ValueError, match=said):
        layout(m, 12)
