"""experiments.precision: attention compared on shared tokens, agreement, metric, latency; tiny, gpt, vit probes."""
import numpy as np
import pytest
import torch

from analysis.trace import AttentionTrace
from experiments import precision
from models import variants

pytestmark = pytest.mark.usefixtures("one_thread")


def _trace(tokens, weights, output):
    return AttentionTrace(tokens=tokens, key_tokens=list(tokens), weights=weights, kind="causal", output=output,
                          notices=())


def test_decoders_that_write_different_answers_are_compared_on_the_shared_prefix():
    w = np.tril(np.ones((1, 1, 4, 4), np.float32))
    w /= w.sum(-1, keepdims=True)
    v = w.copy()
    v[0, 0, 3] = [0, 0, 0, 1]                                # the row after the tokens part is not compared
    res = precision.compare_traces(_trace(list("12=1"), w, "1"), _trace(list("12=2"), v, "2"))
    assert res["tokens"] == list("12=") and res["max_js"].max() == 0 and not res["same_output"]


def test_tiny_fp32_agrees_fully_and_int8_is_measured():
    from data.sorting import held_out
    from experiments.sorting import encode, exact_match
    from models.tiny import load

    tiny = load()
    probe = precision.probe_for(tiny, "", 40)
    made = {k: variants.make(tiny, k, "tiny") for k in ("fp32", "int8_dynamic")}
    rows = precision.measure(tiny, made, probe, runs=2)
    assert rows["fp32"]["top1_agreement"] == 1.0 and rows["fp32"]["cosine"] == pytest.approx(1.0, abs=1e-12)
    assert rows["fp32"]["metric"] == exact_match(tiny.net, encode(held_out(40)))
    assert rows["int8_dynamic"]["top1_agreement"] >= 0.99 and all(r["seconds"] > 0 for r in rows.values())
    ref = tiny.attend("9081726354")
    compared = {key: precision.compare_variant(ref, m, "9081726354") for key, m in made.items()}
    assert compared["fp32"]["max_js"].max() == 0 and compared["fp32"]["same_output"]
    assert 0 < compared["int8_dynamic"]["mean_js"].mean() < 0.01


def test_an_encoder_with_its_mlm_head_is_judged_on_the_users_text(tmp_path):
    from models.hf import load_encoder
    from tests.models.test_hf_mlm_pruned import save_tiny_mlm

    save_tiny_mlm(tmp_path)
    enc = load_encoder(str(tmp_path))
    probe = precision.probe_for(enc, "The cat sat on the mat.", 10, batch=1)
    assert probe.metric_name == "Masked-token accuracy" and "each masked in turn" in probe.about
    made = {k: variants.make(enc, k) for k in ("fp32", "int8_dynamic")}
    assert made["int8_dynamic"].mlm.base_model is made["int8_dynamic"].model  # one copy, still shared
    rows = precision.measure(enc, made, probe, runs=1)
    assert rows["fp32"]["top1_agreement"] == 1.0 and rows["int8_dynamic"]["cosine"] > 0.9


def test_gpt_probe_is_the_hf_loss_on_held_out_windows():
    import math

    from models import load
    from train import gpt as train_gpt

    gpt = load("gpt")
    probe = precision.probe_for(gpt, "", 10, batch=2, name="gpt")
    assert probe.metric_name == "Perplexity" and not probe.higher_is_better and probe.timing == "batch 2 × 128 tokens"
    x = train_gpt.heldout_windows(gpt.tokenizer, "bos")[:precision.LM_WINDOWS]           # (8, 128)
    with torch.no_grad():
        loss = gpt.model(input_ids=x, labels=train_gpt.labels(x, train_gpt.special_ids(gpt.tokenizer))).loss
    got = probe.outputs(gpt)
    assert got.metric == pytest.approx(math.exp(loss.item()), rel=1e-5)
    assert got.metric == pytest.approx(41.533, rel=1e-4)                 # models/weights/gpt/training.json, subset
    assert len(got.choices) == int((x[:, 1:] != gpt.tokenizer.bos_token_id).sum())  # <s> is never a target
    ids, labels, _ = precision.lm_windows(gpt, "")                        # any other decoder: its own tokenizer
    with torch.no_grad():
        loss = gpt.model(input_ids=ids, labels=labels).loss
    assert ids.shape == (precision.LM_WINDOWS, 128) and torch.equal(ids, labels)
    generic = precision.causal_lm_probe(lambda m: m.model, ids, "", labels).outputs(gpt)
    assert generic.metric == pytest.approx(math.exp(loss.item()), rel=1e-5)


def test_vit_probe_is_the_models_own_held_out_accuracy():
    from data import digits
    from models import load
    from train import vit as train_vit

    vit = load("vit")
    probe = precision.probe_for(vit, "", digits.TEST_N, name="vit")
    assert probe.metric_name == "Digits accuracy" and probe.agreement == "the same predicted class"
    images, labels = digits.load()
    test = digits.split()[1]
    got = probe.outputs(vit)
    assert got.metric == train_vit.accuracy(vit.model, train_vit.processor(), images[test], labels[test])
    assert got.metric == 0.98                                             # models/weights/vit/training.json


def test_a_bert_style_causal_lm_is_judged_by_its_own_next_token_loss(tmp_path):
    """Not as an embedding encoder (paraphrase retrieval, as it was): the perplexity its BertLMHeadModel's own loss
    gives on held-out windows, each document framed by its tokenizer ([CLS] … [SEP] for BERT's)."""
    import math

    from transformers import BertConfig, BertLMHeadModel

    from bench.tiny_any import VOCAB, tokenizer
    from models import load

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=37, max_position_embeddings=64, is_decoder=True)
    BertLMHeadModel(cfg).save_pretrained(tmp_path)
    tokenizer().save_pretrained(tmp_path)
    m = load("hf:" + str(tmp_path))
    assert precision.next_token_windows(m) and not precision.reads_text(m)
    probe = precision.probe_for(m, "", 10, batch=2)
    assert probe.metric_name == "Perplexity" and probe.timing == "batch 2 × 64 tokens"
    ids, labels, _ = precision.lm_windows(m)
    from data import python_reference

    docs = [t for doc in python_reference.documents("test")[:40] for t in m.tokenizer(doc)["input_ids"]]
    assert torch.equal(ids.flatten().cpu(), torch.tensor(docs[:ids.numel()]))  # each as its tokenizer frames it
    with torch.no_grad():
        loss = m.task(input_ids=ids, labels=labels).loss                 # transformers' own shifted loss
    assert probe.outputs(m).metric == pytest.approx(math.exp(loss.item()), rel=1e-5)
    rows = precision.measure(m, {k: variants.make(m, k) for k in ("fp32", "int8_dynamic")}, probe, runs=1)
    assert rows["fp32"]["top1_agreement"] == 1.0 and rows["int8_dynamic"]["cosine"] > 0.9
    cfg.is_decoder = False  # the same head attending both ways: each position sees its target, no perplexity
    both = tmp_path / "both"
    BertLMHeadModel(cfg).save_pretrained(both)
    tokenizer().save_pretrained(both)
    m = load("hf:" + str(both))
    assert not precision.next_token_windows(m) and precision.probe_for(m, "", 10, batch=2).metric_name != "Perplexity"
