"""Edge scores on encoder-decoders (experiments.circuits through experiments.circuits_encdec) against hooks written
in this file on the transformers model loaded on its own.

BART and Marian are post-norm: a norm runs on the whole stream after every sublayer, so a sender's write reaches a
receiver through the norms in between. The hooks read the clean run's stream before and after every norm; receiver
r's copy of the stream with a perturbation z of sender s's slot is then, by hand, x = norm_a(u_a + z), and for each
later slot b before r reads, x = norm_b(x + w_b) with w_b that slot's clean write. EAP's reference is
(corrupt_s - clean_s) · ∂(g_r · copy)/∂z with g_r = ∂metric/∂(r's input) from a δ added at r's input by a hook;
patching one edge by hand feeds that copy with z = corrupt_s - clean_s to r's projection.
"""
import numpy as np
import pytest
import torch
from transformers import AutoModelForSeq2SeqLM

import models
from experiments.circuits import check, edge_scores, faithfulness

PAIRS = [("abcdefg", "abcxefg", "a", "b"), ("hello you", "hallo you", "e", "o")]
LAYERS, HEADS, D = 2, 4, 32

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py


@pytest.fixture(scope="module")
def bart(tiny_folder, tmp_path_factory):
    """(our loaded model, the transformers model on its own) of a tiny random BART whose weight matrices are made 5x
    larger (query and key 10x): at the initial std of 0.02 every head attends almost evenly and the logits barely
    move, so few edges would matter beyond rounding."""
    from transformers import AutoTokenizer

    made = tiny_folder("bart", layers=LAYERS, positions=64)
    sharp = AutoModelForSeq2SeqLM.from_pretrained(made)
    with torch.no_grad():
        for name, p in sharp.named_parameters():
            if p.ndim == 2:
                p.mul_(10 if name.endswith(("q_proj.weight", "k_proj.weight")) else 5)
    folder = tmp_path_factory.mktemp("bart-sharp")
    sharp.save_pretrained(folder)
    AutoTokenizer.from_pretrained(made).save_pretrained(folder)
    ref = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager").eval()
    return models.load(f"hf:{folder}"), ref


def _norms(ref):
    """Each stream's norms in slot order: {"enc": [...], "dec": [...]} (BART: the embedding's norm first)."""
    enc, dec = ref.get_encoder(), ref.get_decoder()
    out = {"enc": [enc.layernorm_embedding], "dec": [dec.layernorm_embedding]}
    for b in enc.layers:
        out["enc"] += [b.self_attn_layer_norm, b.final_layer_norm]
    for b in dec.layers:
        out["dec"] += [b.self_attn_layer_norm, b.encoder_attn_layer_norm, b.final_layer_norm]
    return out


def _receivers():
    """receiver -> (stream, the slot after which it reads)."""
    out = {}
    for layer in range(LAYERS):
        out |= {f"enc.L{layer}H{h}.{p}": ("enc", 2 * layer) for p in "qkv" for h in range(HEADS)}
        out[f"enc.L{layer}.mlp"] = ("enc", 2 * layer + 1)
        out |= {f"dec.L{layer}H{h}.{p}": ("dec", 3 * layer) for p in "qkv" for h in range(HEADS)}
        out |= {f"cross.L{layer}H{h}.q": ("dec", 3 * layer + 1) for h in range(HEADS)}
        out |= {f"cross.L{layer}H{h}.{p}": ("enc", 2 * LAYERS) for p in "kv" for h in range(HEADS)}
        out[f"dec.L{layer}.mlp"] = ("dec", 3 * layer + 2)
    out["logits"] = ("dec", 3 * LAYERS)
    return out


def _slot(sender):
    """sender -> (stream, slot it writes in)."""
    if sender.endswith("embed"):
        return sender[:3], 0
    stack, rest = sender.split(".", 1)
    layer = int(rest[1:].split("H")[0].split(".")[0])
    if stack == "enc":
        return "enc", 1 + 2 * layer + rest.endswith("mlp")
    return "dec", 1 + 3 * layer + (2 if rest.endswith("mlp") else stack == "cross")


def _hooked(ref, src, delta, embed=None):
    """Run `ref` on src (1, S) from its start token with delta[r] (1, T, C) added to each receiver's input, and
    embed (1, S, C) in place of the encoder's embedding when given. -> (logits (V,), sender writes {name: (T, C)},
    each norm's (input, output) {(stream, slot): ((T, C), (T, C))})."""
    writes, seen, hooks = {}, {}, []
    hd = D // HEADS
    for stream, norms in _norms(ref).items():
        for i, norm in enumerate(norms):
            hooks.append(norm.register_forward_hook(
                lambda mod, inp, out, key=(stream, i): seen.__setitem__(key, (inp[0][0], out[0]))))
        def on_embed(mod, args, stream=stream):
            x = embed if (stream == "enc" and embed is not None) else args[0]
            writes[f"{stream}.embed"] = x[0]
            return (x,)
        hooks.append(norms[0].register_forward_pre_hook(on_embed))

    def per_head(names):
        def hook(mod, inp, out):
            return torch.cat([mod.forward(inp[0] + delta[n])[..., j * hd:(j + 1) * hd]
                              for j, n in enumerate(names)], -1)
        return hook

    def on_o(prefix):
        def hook(mod, args):
            z = args[0][0]                                                 # (T, H * hd)
            for h in range(HEADS):
                writes[f"{prefix}H{h}"] = z[:, h * hd:(h + 1) * hd] @ mod.weight[:, h * hd:(h + 1) * hd].T
        return hook

    blocks = [("enc", b, b.self_attn, "enc") for b in ref.get_encoder().layers]
    blocks += [(s, b, a, "dec") for b in ref.get_decoder().layers for s, a in (("dec", b.self_attn),
                                                                              ("cross", b.encoder_attn))]
    layer_of = {}
    for stack, block, attn, mlp_stack in blocks:
        layer = layer_of[stack] = layer_of.get(stack, -1) + 1
        for p in "qkv":
            hooks.append(getattr(attn, f"{p}_proj").register_forward_hook(
                per_head([f"{stack}.L{layer}H{h}.{p}" for h in range(HEADS)])))
        hooks.append(attn.out_proj.register_forward_pre_hook(on_o(f"{stack}.L{layer}")))
        if stack != "cross":
            name = f"{mlp_stack}.L{layer}.mlp"
            hooks.append(block.fc1.register_forward_pre_hook(lambda mod, args, n=name: (args[0] + delta[n],)))
            hooks.append(block.fc2.register_forward_hook(
                lambda mod, inp, out, n=name: writes.__setitem__(n, out[0])))
    hooks.append(ref.lm_head.register_forward_pre_hook(lambda mod, args: (args[0] + delta["logits"],)))
    start = torch.tensor([[ref.config.decoder_start_token_id]])
    try:
        logits = ref(input_ids=src, decoder_input_ids=start).logits[0, -1]
    finally:
        for h in hooks:
            h.remove()
    return logits, writes, seen


def _copy(seen, stream, a, read, z):
    """Receiver's copy of `stream` where it reads (after slot `read`), with z (T, C) added to slot a's sum."""
    norms = seen[stream]
    x = norms[a][2](norms[a][0] + z)
    for b in range(a + 1, read + 1):
        u, _, norm = norms[b]
        x = norm(x + (u - norms[b - 1][1]))
    return x


def _run(ref, tok, text, delta=None, embed=None):
    src = torch.tensor([tok(text)["input_ids"]])
    S = src.shape[1]
    full = {r: (delta or {}).get(r, torch.zeros(1, S if st == "enc" else 1, D)) for r, (st, _) in _receivers().items()}
    logits, writes, seen = _hooked(ref, src, full, embed)
    norms = _norms(ref)
    return logits, writes, {st: [(*seen[(st, i)], n) for i, n in enumerate(norms[st])] for st in norms}


def _metric(logits, tok, pair):
    return logits[tok.convert_tokens_to_ids(pair[2])] - logits[tok.convert_tokens_to_ids(pair[3])]


@pytest.mark.parametrize("method", ["eap", "eap-ig"])
def test_eap_equals_the_hook_reference_on_a_tiny_bart(bart, method):
    """EAP-IG (2 steps): the encoder's embedding at α = 1/2 and 1 between the corrupted and the clean source, each
    run's own norms and gradients, averaged."""
    m, ref = bart
    tok = m.tokenizer
    E = edge_scores(m, PAIRS, method=method, steps=2)
    names = _receivers()
    assert len(E) > 400 and set(E.receiver) == set(names)
    expected = {}
    alphas = [None] if method == "eap" else [0.5, 1.0]
    for pair in PAIRS:
        with torch.no_grad():
            _, w_clean, _ = _run(ref, tok, pair[0])
            _, w_corrupt, _ = _run(ref, tok, pair[1])
        S = len(tok(pair[0])["input_ids"])
        for alpha in alphas:
            e0, e1 = w_corrupt["enc.embed"], w_clean["enc.embed"]
            e = None if alpha is None else e0 + alpha * (e1 - e0)
            delta = {r: torch.zeros(1, S if st == "enc" else 1, D, requires_grad=True) for r, (st, _) in names.items()}
            logits, _, seen = _run(ref, tok, pair[0], delta, None if e is None else e[None])
            grads = dict(zip(names, torch.autograd.grad(_metric(logits, tok, pair), list(delta.values()))))
            seen = {st: [(u.detach(), y.detach(), n) for u, y, n in norms] for st, norms in seen.items()}
            for s in w_clean:
                stream, a = _slot(s)
                for r, (st, read) in names.items():
                    if st != stream or a > read:
                        continue
                    z = torch.zeros_like(w_clean[s], requires_grad=True)
                    (v,) = torch.autograd.grad((_copy(seen, stream, a, read, z) * grads[r][0]).sum(), z)
                    score = float(((w_corrupt[s] - w_clean[s]) * v).sum()) / len(PAIRS) / len(alphas)
                    expected[(s, r)] = expected.get((s, r), 0.0) + score
    mine = {(s, r): v for s, r, v in zip(E.sender, E.receiver, E.score)}
    assert set(mine) == set(expected)  # every encoder sender reaches every cross k and v, nothing crosses otherwise
    assert {("enc.L0H1", "cross.L1H2.k"), ("enc.embed", "cross.L0H0.v")} <= set(mine)
    assert all(r.startswith("enc.") or (r.startswith("cross.") and r[-1] in "kv") for s, r in mine
               if s.startswith("enc."))
    keys = list(expected)
    want = np.array([expected[k] for k in keys])
    assert np.abs(want).max() > 1e-2
    np.testing.assert_allclose([mine[k] for k in keys], want, rtol=1e-3, atol=1e-5 * np.abs(want).max())


def test_patching_one_cross_attention_key_edge_equals_patching_it_by_hand(bart):
    m, ref = bart
    tok = m.tokenizer
    edges = [("enc.L0.mlp", "cross.L1H3.k"), ("enc.L1H1", "cross.L1H3.k"), ("enc.embed", "cross.L0H1.k")]
    E = edge_scores(m, PAIRS, method="patching", edges=edges)
    expected = []
    for s, r in edges:
        effects = []
        for pair in PAIRS:
            with torch.no_grad():
                clean, w_clean, seen = _run(ref, tok, pair[0])
                _, w_corrupt, _ = _run(ref, tok, pair[1])
                stream, a = _slot(s)
                x = _copy(seen, stream, a, 2 * LAYERS, w_corrupt[s] - w_clean[s])    # (S, C) r's copy
                patched, _, _ = _run(ref, tok, pair[0], {r: (x - seen["enc"][-1][1])[None]})
            effects.append(float(_metric(patched, tok, pair) - _metric(clean, tok, pair)))
        expected.append(np.mean(effects))
    assert np.abs(expected).min() > 1e-3  # through two or four of the encoder's norms
    np.testing.assert_allclose(E.score, expected, rtol=1e-3, atol=1e-6)


@pytest.fixture(scope="module")
def mbart(tmp_path_factory):
    """A tiny random mBART (pre-norm, a last norm on each stack), written as bench.tiny_families writes BART."""
    from bench.tiny_families import FAMILIES, SIZE, Family, _bart_like, _tokenizer

    family = Family("encoder-decoder", FAMILIES["bart"].specials, FAMILIES["bart"].template,
                    _bart_like("MBartConfig", "MBartForConditionalGeneration", "</s>"))
    tok = _tokenizer(family, 64)
    torch.manual_seed(0)
    net = family.build(len(tok), {t: tok.convert_tokens_to_ids(t) for t in family.specials},
                       {**SIZE, "layers": LAYERS, "positions": 64})
    folder = tmp_path_factory.mktemp("mbart")
    tok.save_pretrained(folder)
    net.eval().save_pretrained(folder)
    return models.load(f"hf:{folder}")


@pytest.mark.parametrize("name", ["bart", "mbart", "seq2seq-transformer"])
def test_faithfulness_of_every_edge_is_one_and_of_none_is_corrupt_over_clean(name, bart, mbart):
    """The model's own forward pass (transformers') gives clean and corrupt: the tiny BART (post-norm, a norm after
    the embedding), a tiny mBART (pre-norm) and the built-in Marian (post-norm, no norm after the embedding), on a
    date the built-in was trained on."""
    m, ref = {"bart": bart, "mbart": (mbart, None)}.get(name) or (models.load(name), None)
    pair = PAIRS[0] if name == "bart" else ("3 march 2021", "3 march 1921", "2", "1")
    ref = ref or m.model
    tok = m.tokenizer
    start = torch.tensor([[ref.config.decoder_start_token_id]])
    with torch.no_grad():
        clean, corrupt = (float(_metric(ref(input_ids=torch.tensor([tok(t)["input_ids"]]), decoder_input_ids=start)
                                        .logits[0, -1], tok, pair)) for t in pair[:2])
    E = edge_scores(m, [pair], method="eap")
    assert faithfulness(m, [pair], E) == pytest.approx(1.0, abs=1e-9)
    assert faithfulness(m, [pair], []) == pytest.approx(corrupt / clean, rel=1e-4)
    assert faithfulness(m, [pair], [], ablation="mean") == pytest.approx(corrupt / clean, rel=1e-4)


def test_api_circuit_and_check_refuses_what_it_cannot_trace(bart, tiny_folder):
    m, _ = bart
    import api

    top = api.circuit(m, PAIRS, top=5)
    assert len(top) == 5 and top.attrs["faithfulness"] == pytest.approx(faithfulness(m, PAIRS, top))
    check(m, encoder_decoders=True)
    check(m, PAIRS, encoder_decoders=True)
    with pytest.raises(ValueError, match="comes from the Circuits view or api.circuit"):  # pages read decoder names
        check(m)
    t5 = models.load("hf:" + tiny_folder("t5", layers=1, positions=64))
    for pages in (True, False):  # the Pruning lab says what the Circuits view says of one neither traces
        with pytest.raises(ValueError, match="BART, mBART and Marian encoder-decoders .*, not t5"):
            check(t5, encoder_decoders=pages)
    with pytest.raises(ValueError, match="line up token by token"):
        check(m, [("abc", "abcd", "a", "b")], encoder_decoders=True)



def test_names_split_into_their_stack_and_a_decoder_name():
    from experiments.circuits_encdec import graph
    from viz.circuits import _split as split  # how the graph figure reads the names experiments.circuits_encdec gives

    g = graph(1, 1, 1)
    assert [split(n) for n in g.senders] == [("enc", "embed"), ("enc", "L0H0"), ("enc", "L0.mlp"), ("dec", "embed"),
                                             ("dec", "L0H0"), ("cross", "L0H0"), ("dec", "L0.mlp")]
    assert split("cross.L1H2.k") == ("cross", "L1H2.k") and split("logits") == (None, "logits")
    assert split("L0H1.q") == (None, "L0H1.q")


@pytest.mark.parametrize("family", ["gpt-neox"])
def test_the_circuits_view_draws_neox(family, tiny_folder):
    """The Circuits view draws GPT-NeoX's circuit, found and measured (encoder-decoders' pages:
    tests/views/test_page_circuits.py)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file("../../app.py", default_timeout=300)
    for k, v in dict(model="hf:", hf_spec=tiny_folder(family, layers=LAYERS, positions=64), circ_pairs="1").items():
        at.query_params[k] = v
    at.run()
    at = at.switch_page("views/circuits.py").run()
    jobs = at.session_state["_work_jobs"] if "_work_jobs" in at.session_state else {}
    if "circuits" in jobs:
        jobs["circuits"].thread.join(300)
    at = at.run()
    assert not at.exception and not at.error
    assert [h.value for h in at.header] == ["The circuit", "Faithfulness", "EAP against exact patching"]
    table = at.dataframe[0].value
    assert len(at.get("plotly_chart")) == 3 and len(table) == 20 and set(table.sender) <= {
        "embed", *(f"L{i}H{h}" for i in range(LAYERS) for h in range(HEADS)), *(f"L{i}.mlp" for i in range(LAYERS))}
