"""Edge scores and faithfulness (experiments.circuits) on tiny random GPT-2 and Llama models (bench.tiny_families),
against hooks written in this file on the transformers models loaded on their own: each receiver (a head's q, k or
v projection, an MLP's norm, the final norm) gets its own zero δ added to its input, so ∂metric/∂δ is that
receiver's gradient, and a δ of corrupt - clean patches one edge by hand. Then the induction circuit on `induction`.
"""
import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

import models
from bench.tiny_families import FAMILIES, _tokenizer
from experiments.circuits import check, edge_scores, faithfulness, faithfulness_curve, graph

PAIRS = [("When Mary met John, John gave a cup to", "When John met Mary, Mary gave a cup to", "M", "J"),
         ("Ann saw Bob; Bob waved to", "Bob saw Ann; Ann waved to", "A", "B")]
LAYERS, HEADS, D = 2, 4, 32
PARTS = {"gpt2": dict(blocks="transformer.h", ln1="ln_1", proj=("attn.c_attn",), o="attn.c_proj", ln2="ln_2",
                      final="transformer.ln_f"),
         "llama": dict(blocks="model.layers", ln1="input_layernorm",
                       proj=("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"), o="self_attn.o_proj",
                       ln2="post_attention_layernorm", final="model.norm"),
         "gpt-neox": dict(blocks="gpt_neox.layers", ln1="input_layernorm", proj=("attention.query_key_value",),
                          o="attention.dense", ln2="post_attention_layernorm", final="gpt_neox.final_layer_norm")}
FUSED = ("gpt2", "gpt-neox")  # one projection writes q, k and v

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py


@pytest.fixture(scope="module")
def tiny(tiny_folder):
    """family -> (our loaded model, the transformers model on its own, the tokenizer)."""
    def get(family):
        folder = tiny_folder(family, layers=LAYERS, positions=64)
        ref = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
        return models.load("hf:" + folder), ref, _tokenizer(FAMILIES[family])
    return get


def _hooked(ref, family, ids, delta, embed=None):
    """Run `ref` on ids (1, T) with delta[name] (1, T, C) added to each receiver's input (per kv head for Llama's
    k and v); embed (1, T, C) replaces the residual entering layer 0. -> (logits (V,), sender writes {name: (T, C)})."""
    parts, cfg = PARTS[family], ref.config
    hd = cfg.hidden_size // HEADS
    kvh = getattr(cfg, "num_key_value_heads", HEADS)
    blocks = ref.get_submodule(parts["blocks"])
    x, writes, hooks = {}, {}, []

    def on_block(layer):
        def hook(mod, args, kwargs):
            h = args[0] if args else kwargs["hidden_states"]
            if layer == 0:
                h = h if embed is None else embed
                writes["embed"] = h[0]
            x[layer] = h
            return ((h, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": h})
        return hook

    def on_proj(layer, block, which):
        def hook(mod, inp, out):
            pieces = {}  # (column where the projection writes it, piece (1, T, hd))
            for p in which:  # "q", "k", "v" in the order this projection writes them
                n = HEADS if (p == "q" or family in FUSED) else kvh
                for j in range(n):
                    y = mod.forward(block.get_submodule(parts["ln1"])(x[layer] + delta[f"L{layer}H{j}.{p}"]))
                    at = {"gpt2": "qkv".index(p) * HEADS * hd + j * hd,  # [q heads | k heads | v heads]
                          "gpt-neox": (3 * j + "qkv".index(p)) * hd}.get(family, j * hd)  # NeoX: [q k v] per head
                    pieces[at] = y[..., at:at + hd]
            return torch.cat([pieces[at] for at in sorted(pieces)], -1)
        return hook

    def on_o(layer):
        def hook(mod, args):
            z = args[0][0]                                                 # (T, H * hd)
            w = mod.weight if family == "gpt2" else mod.weight.T            # (H * hd, C)
            for h in range(HEADS):
                writes[f"L{layer}H{h}"] = z[:, h * hd:(h + 1) * hd] @ w[h * hd:(h + 1) * hd]
        return hook

    for layer, block in enumerate(blocks):
        hooks.append(block.register_forward_pre_hook(on_block(layer), with_kwargs=True))
        projs = [block.get_submodule(p) for p in parts["proj"]]
        for mod, which in zip(projs, ["qkv"] if family in FUSED else ["q", "k", "v"]):
            hooks.append(mod.register_forward_hook(on_proj(layer, block, which)))
        hooks.append(block.get_submodule(parts["o"]).register_forward_pre_hook(on_o(layer)))
        hooks.append(block.get_submodule(parts["ln2"]).register_forward_pre_hook(
            lambda mod, args, layer=layer: (args[0] + delta[f"L{layer}.mlp"],)))
        hooks.append(block.mlp.register_forward_hook(
            lambda mod, inp, out, layer=layer: writes.__setitem__(f"L{layer}.mlp", out[0])))
    hooks.append(ref.get_submodule(parts["final"]).register_forward_pre_hook(
        lambda mod, args: (args[0] + delta["logits"],)))
    try:
        logits = ref(input_ids=ids).logits[0, -1]
    finally:
        for h in hooks:
            h.remove()
    return logits, writes


def _receivers(ref, family):
    """The hook's receivers: every head's q, k, v (Llama: k and v per kv head), every MLP, the logits."""
    kvh = getattr(ref.config, "num_key_value_heads", HEADS)
    out = ["logits"]
    for layer in range(LAYERS):
        out += [f"L{layer}H{j}.{p}" for p in "qkv" for j in range(HEADS if p == "q" or family in FUSED else kvh)]
        out.append(f"L{layer}.mlp")
    return out


def _reference_pair(ref, family, tok, pair, steps=None):
    """{(sender, hook receiver): score} of one pair by EAP (steps None) or EAP-IG, through the hooks."""
    clean, corrupt = (torch.tensor([tok(t)["input_ids"]]) for t in pair[:2])
    a, w = tok.convert_tokens_to_ids(pair[2]), tok.convert_tokens_to_ids(pair[3])
    T, names = clean.shape[1], _receivers(ref, family)
    zero = {r: torch.zeros(1, T, D) for r in names}
    with torch.no_grad():
        _, w_clean = _hooked(ref, family, clean, zero)
        _, w_corrupt = _hooked(ref, family, corrupt, zero)
    alphas = [None] if steps is None else [k / steps for k in range(1, steps + 1)]
    grads = {r: torch.zeros(1, T, D) for r in names}
    for alpha in alphas:
        delta = {r: torch.zeros(1, T, D, requires_grad=True) for r in names}
        embed = None if alpha is None else (w_corrupt["embed"] + alpha * (w_clean["embed"] - w_corrupt["embed"]))[None]
        logits, _ = _hooked(ref, family, clean, delta, embed)
        got = torch.autograd.grad(logits[a] - logits[w], [delta[r] for r in names])
        for r, g in zip(names, got):
            grads[r] += g / len(alphas)
    return {(s, r): float(((w_corrupt[s] - w_clean[s]) * grads[r][0]).sum()) for s in w_clean for r in names}


def _grouped(E, family, ref):
    """Our scores keyed like the hooks': Llama's per-query-head k and v summed over each kv head's group."""
    kvh = getattr(ref.config, "num_key_value_heads", HEADS)
    out = {}
    for s, r, v in zip(E.sender, E.receiver, E.score):
        if family == "llama" and r[-1] in "kv":
            layer, h = r[1:-2].split("H")
            r = f"L{layer}H{int(h) // (HEADS // kvh)}.{r[-1]}"
        out[(s, r)] = out.get((s, r), 0.0) + v
    return out


@pytest.mark.parametrize("family", ["gpt2", "llama", "gpt-neox"])
@pytest.mark.parametrize("method", ["eap", "eap-ig"])
def test_edge_scores_equal_the_hook_reference(family, method, tiny):
    """GPT-NeoX (the tiny one: parallel residual, rotary on half of each head) reads each MLP's input before its
    layer's heads write, so the hook's MLP receivers get no edge from their own layer's heads."""
    m, ref, tok = tiny(family)
    E = edge_scores(m, PAIRS, method=method, steps=3)
    assert list(E.columns) == ["sender", "receiver", "score"]
    g = graph(LAYERS, HEADS, True, parallel=family == "gpt-neox")
    assert len(E) == int(g.allowed.sum()) and {"embed", "L0H1", "L1.mlp"} <= set(E.sender)
    refs = [_reference_pair(ref, family, tok, p, steps=3 if method == "eap-ig" else None) for p in PAIRS]
    mine = _grouped(E, family, ref)
    keys = list(mine)
    expected = np.array([np.mean([r[k] for r in refs]) for k in keys])
    assert len(keys) > 50 and np.abs(expected).max() > 1e-3  # scores of a random model are small, but not zero
    np.testing.assert_allclose([mine[k] for k in keys], expected, rtol=1e-3, atol=1e-5 * np.abs(expected).max())


def _metric(ref, family, tok, pair, delta=None):
    ids = torch.tensor([tok(pair[0])["input_ids"]])
    T = ids.shape[1]
    delta = delta or {}
    full = {r: delta.get(r, torch.zeros(1, T, D)) for r in _receivers(ref, family)}
    with torch.no_grad():
        logits, writes = _hooked(ref, family, ids, full)
    return float(logits[tok.convert_tokens_to_ids(pair[2])] - logits[tok.convert_tokens_to_ids(pair[3])]), writes


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_patching_one_edge_equals_patching_it_by_hand(family, tiny):
    m, ref, tok = tiny(family)
    receivers = ["L1H2.q", "L1.mlp", "logits", "L0.mlp"] + (["L1H1.k", "L1H3.v"] if family == "gpt2" else [])
    g = graph(LAYERS, HEADS, True)
    edges = [(s, r) for s in ("embed", "L0H1", "L0.mlp", "L1H0") for r in receivers
             if g.allowed[g.senders.index(s), g.receivers.index(r)]]
    E = edge_scores(m, PAIRS, method="patching", edges=edges)
    assert list(zip(E.sender, E.receiver)) == edges
    expected = []
    for s, r in edges:
        effects = []
        for pair in PAIRS:
            clean, w_clean = _metric(ref, family, tok, pair)
            corrupt_pair = (pair[1], *pair[1:])
            _, w_corrupt = _metric(ref, family, tok, corrupt_pair)
            patched, _ = _metric(ref, family, tok, pair, {r: (w_corrupt[s] - w_clean[s])[None]})
            effects.append(patched - clean)
        expected.append(np.mean(effects))
    assert np.abs(expected).max() > 1e-4
    # a difference of two float32 logits: exact up to rounding (~1e-7 here), which rtol alone would not allow
    np.testing.assert_allclose(E.score, expected, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("family", ["gpt2", "llama", "gpt-neox"])
def test_faithfulness_of_every_edge_is_one_and_of_none_is_corrupt_over_clean(family, tiny):
    m, ref, tok = tiny(family)
    E = edge_scores(m, PAIRS[:1], method="eap")
    assert faithfulness(m, PAIRS[:1], E) == pytest.approx(1.0, abs=1e-9)
    clean, _ = _metric(ref, family, tok, PAIRS[0])
    corrupt, _ = _metric(ref, family, tok, (PAIRS[0][1], *PAIRS[0][1:]))
    assert faithfulness(m, PAIRS[:1], []) == pytest.approx(corrupt / clean, rel=1e-4)
    # mean ablation over one pair is the corrupted run itself
    assert faithfulness(m, PAIRS[:1], [], ablation="mean") == pytest.approx(corrupt / clean, rel=1e-4)


def test_pairs_that_do_not_line_up_get_one_sentence(tiny):
    m, _, _ = tiny("gpt2")
    with pytest.raises(ValueError, match="must line up token by token"):
        edge_scores(m, [("When Mary met John", "When Mary met Johnny", "M", "J")])
    with pytest.raises(ValueError, match="Unknown method"):
        edge_scores(m, PAIRS, method="acdc")
    with pytest.raises(ValueError, match="no edge L1H0 -> L0.mlp"):
        faithfulness(m, PAIRS, [("L1H0", "L0.mlp")])


def test_the_induction_path_is_among_the_top_five_edges():
    """Repeated random syllables (the Circuits view's task: the first copy replaced in the corrupted text); the
    heads found here from their attention over every pair, not from the edges: `induction` has two previous-token
    heads in layer 0 and two induction heads in layer 1, and the path runs from one of the first into the key of one
    of the second."""
    from data.circuit_tasks import repeats

    m = models.load("induction")
    pairs = repeats(8)
    ws = np.stack([m.attend(clean).weights for clean, *_ in pairs])          # (P, L, H, T, T)
    T = ws.shape[-1]
    prev = np.diagonal(ws[:, 0], -1, axis1=-2, axis2=-1).mean(axis=(0, 2))  # (H,) previous-token attention
    back = ws[:, 1, :, np.arange(T - 5, T), np.arange(T - 5, T) - 9].mean(axis=(0, 1))  # (H,) token after the copy
    prev_heads, induction_heads = np.flatnonzero(prev > 0.8), np.flatnonzero(back > 0.3)
    assert len(prev_heads) and len(induction_heads), (prev, back)
    E = edge_scores(m, pairs, method="eap")
    top = E.reindex(E.score.abs().sort_values(ascending=False).index).head(5)
    paths = {(f"L0H{p}", f"L1H{i}.k") for p in prev_heads for i in induction_heads}
    assert paths & set(zip(top.sender, top.receiver)), top


@pytest.mark.parametrize("ablation", ["corrupt", "mean"])
def test_the_faithfulness_curve_batches_what_faithfulness_measures_one_count_at_a_time(tiny, ablation):
    m, _, _ = tiny("llama")
    E = edge_scores(m, PAIRS[:1])
    ranked = E.iloc[E.score.abs().argsort(kind="stable")[::-1]]
    counts = [0, 1, 7, 30, len(ranked)]
    curve = faithfulness_curve(m, PAIRS[:1], ranked, counts, ablation)
    one_by_one = [faithfulness(m, PAIRS[:1], ranked.head(k), ablation) for k in counts]
    np.testing.assert_allclose(curve, one_by_one, rtol=1e-5, atol=1e-9)
    assert curve[-1] == pytest.approx(1.0, abs=1e-6)  # a batch of 5 rounds float32 apart from one run


def test_check_refuses_what_circuits_cannot_trace_in_one_sentence():
    check(models.load("gpt"))
    check(models.load("induction"), [("ba ke mi ba", "so do ra ba", "ke", "do")])
    with pytest.raises(ValueError, match="a language model to its next token"):
        check(models.load("bert"))
    with pytest.raises(ValueError, match="line up token by token"):
        check(models.load("induction"), [("ba ke mi ba", "ba ke mi ba ke", "ke", "mi")])


def test_api_circuit_ranks_edges_and_measures_their_faithfulness(tiny):
    import api

    m, _, _ = tiny("gpt2")
    every = api.circuit(m, PAIRS)
    assert list(every.columns) == ["sender", "receiver", "score"]
    assert list(every.score.abs()) == sorted(every.score.abs(), reverse=True)
    assert every.attrs["faithfulness"] == pytest.approx(1.0, abs=1e-9)
    top = api.circuit(m, PAIRS, top=5)
    assert top.equals(every.head(5))
    assert top.attrs["faithfulness"] == pytest.approx(faithfulness(m, PAIRS, every.head(5)))


@pytest.mark.parametrize("name, pair", [
    ("gpt", ("total = sum(values", "total = sum[values", ")", "]")),
    ("induction", ("ba ke mi lo ba ke mi", "so do ra ne ba ke mi", "lo", "ne")),
    ("tiny", ("31425", "32425", "1", "2")),
])
def test_the_built_ins_run_as_the_model_does(name, pair):
    """Every edge clean is the model's clean run and none is its corrupted run, through the model's own forward
    (experiments.patching's), for the built-ins: `gpt` (a Llama with shared key/value heads), `induction`
    (attention only) and `tiny` (models.attention blocks with MLPs)."""
    from experiments.patching import Runner, pair_ids

    m = models.load(name)
    runner = Runner(m)
    clean, corrupt, a, w = pair_ids(runner, *pair)
    with torch.no_grad():
        diffs = [float(runner.logits(ids)[0, a] - runner.logits(ids)[0, w]) for ids in (clean, corrupt)]
    E = edge_scores(m, [pair], method="eap")
    assert faithfulness(m, [pair], E) == pytest.approx(1.0, abs=1e-9)
    assert faithfulness(m, [pair], []) == pytest.approx(diffs[1] / diffs[0], rel=1e-4)


@pytest.mark.parametrize("family", ["qwen2", "mistral"])
def test_the_other_llama_layouts_run_as_the_model_does(family, tiny_folder):
    m = models.load("hf:" + tiny_folder(family, layers=LAYERS, positions=64))
    pair, ref = PAIRS[0], m.model
    ids = [torch.tensor(m.encode(t)[0].tolist()) for t in pair[:2]]
    a, w = (m.tokenizer.convert_tokens_to_ids(t) for t in pair[2:])
    with torch.no_grad():
        clean, corrupt = (float(ref(input_ids=x).logits[0, -1, a] - ref(input_ids=x).logits[0, -1, w]) for x in ids)
    assert faithfulness(m, [pair], edge_scores(m, [pair])) == pytest.approx(1.0, abs=1e-9)
    assert faithfulness(m, [pair], []) == pytest.approx(corrupt / clean, rel=1e-4)


def test_a_pruned_built_in_is_refused_with_one_sentence():
    from models.prune import pruned_copy

    m = models.load("tiny")
    m.net = pruned_copy(m.net, {0: [1]})
    with pytest.raises(ValueError, match="Heads were pruned"):
        edge_scores(m, [("31425", "32425", "1", "2")])


def test_concurrent_calls_on_one_shared_model_agree_with_one_at_a_time():
    from concurrent.futures import ThreadPoolExecutor

    from bench.circuits import induction_pairs

    m = models.load("induction")
    tasks = [(induction_pairs(n=2, seed=s), method) for s in range(2) for method in ("eap", "patching")]
    alone = [edge_scores(m, p, method=k).score.to_numpy() for p, k in tasks]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda t: edge_scores(m, t[0], method=t[1]).score.to_numpy(), tasks))
    for x, y in zip(alone, together):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-9)


def test_patching_one_edge_a_batch_gives_the_batched_scores():
    from bench.circuits import induction_pairs
    from experiments.circuits import _patched, _prepare

    m = models.load("induction")
    pairs = induction_pairs(n=1)
    lay, g, (p,) = _prepare(m, pairs)
    edges = [tuple(e) for e in g.allowed.nonzero().tolist()]
    batched = edge_scores(m, pairs, method="patching").score.to_numpy()
    # float32 logits of a few units, run in batches of other sizes: a few ulps apart (1.4e-6 seen on AVX2 kernels)
    np.testing.assert_allclose(_patched(lay, g, p, edges, budget=1).numpy(), batched, rtol=1e-5, atol=1e-5)
