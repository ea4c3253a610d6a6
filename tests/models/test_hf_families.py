"""Every Hugging Face family from a folder: tiny random models (bench.tiny_families) against transformers' own
outputs, loaded independently. attend() equals output_attentions within 1e-5 (encoder, decoder, cross), greedy
tokens equal transformers' generate, GQA sharing, inside-a-head Q/K, the real KV cache, ViT patch order, and one
sentence for what cannot be shown."""
import json
import shutil

import numpy as np
import pytest
import torch
from transformers import (
    AutoImageProcessor,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForImageClassification,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    DynamicCache,
)

import models
from analysis.inside_head import steps
from analysis.kv import kv_bytes_per_token
from analysis.trace import AttentionTrace
from models.hf import encdec

TEXT = "Attention is all you need."
ENCODERS = ["bert", "roberta", "distilbert", "electra", "albert", "deberta-v2"]
DECODERS = ["gpt2", "gpt-neox", "llama", "mistral", "qwen2"]
ENC_DEC = ["t5", "bart", "marian"]
GAP = 1e-5


pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py


def gap(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max())


def stacked(attentions) -> np.ndarray:
    return torch.stack(attentions, 1)[0].numpy()  # (L, H, Tq, Tk)


@pytest.mark.parametrize("name", ENCODERS)
def test_encoder_attention_equals_output_attentions(name, tiny_folder):
    folder = tiny_folder(name)
    m = models.load("hf:" + folder)
    tr = m.attend(TEXT)
    tok = AutoTokenizer.from_pretrained(folder)
    ref = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    enc = tok(TEXT, return_tensors="pt")
    with torch.no_grad():
        expected = stacked(ref(**enc, output_attentions=True).attentions)
    assert m.family == "encoder" and tr.kind == "self" and not tr.parts
    assert tr.tokens == tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    assert gap(tr.weights, expected) < GAP


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_writes_what_generate_writes_and_attends_as_the_model(name, tiny_folder):
    folder = tiny_folder(name)
    m = models.load("hf:" + folder)
    tr = m.attend(TEXT, new_tokens=5)
    tok = AutoTokenizer.from_pretrained(folder)
    ref = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    enc = tok(TEXT, return_tensors="pt")
    with torch.no_grad():
        full = ref.generate(**enc, max_new_tokens=5, do_sample=False, num_beams=1, pad_token_id=0)  # (1, T + 5)
        expected = stacked(ref(full, output_attentions=True).attentions)
    assert tr.kind == "causal" and tr.tokens == tok.convert_ids_to_tokens(full[0].tolist())
    assert tr.output == tok.decode(full[0, enc["input_ids"].shape[1]:])
    assert gap(tr.weights, expected) < GAP
    assert np.triu(tr.weights, k=1).max() == 0  # no token sees the future


@pytest.mark.parametrize("name", ["llama", "mistral", "qwen2"])
def test_grouped_query_heads_share_the_kv_head_the_model_uses(name, tiny_folder):
    from models.internals import llama_qkv

    m = models.load("hf:" + tiny_folder(name))
    assert (m.n_heads, m.kv_heads, m.kv_head_of) == (4, 2, [0, 0, 1, 1])
    assert "4 query heads share 2 key/value heads" in m.label
    for layer in range(m.n_layers):
        for head in range(m.n_heads):
            d = m.head_qkv(TEXT, layer, head)
            assert d.kv_head == m.kv_head_of[head]
            assert gap(steps(d.x, d.q, d.k, d.v, True, True)["softmax"], d.model_weights) < GAP
    # the mapping carries weight: the other key/value head's keys give other weights
    ids, _ = m.encode(TEXT)
    with torch.no_grad():
        hidden = m.model(input_ids=ids, output_hidden_states=True).hidden_states
        _, q, k, v = llama_qkv(m.model, hidden[1], 1)
    d = m.head_qkv(TEXT, 1, 0)
    wrong = steps(d.x, q[0, 0].numpy(), k[0, 1].numpy(), v[0, 1].numpy(), True, True)["softmax"]
    assert gap(wrong, d.model_weights) > 1e-3


def test_inside_a_head_of_gpt2_and_why_not_for_others(tiny_folder):
    gpt2 = models.load("hf:" + tiny_folder("gpt2"))
    assert gpt2.kv_head_of == [0, 1, 2, 3]
    d = gpt2.head_qkv(TEXT, 1, 2)
    assert gap(steps(d.x, d.q, d.k, d.v, True, True)["softmax"], d.model_weights) < GAP
    neox = models.load("hf:" + tiny_folder("gpt-neox")).head_qkv(TEXT, 0, 0)  # from the capture's record
    assert neox.rope and gap(steps(neox.x, neox.q, neox.k, neox.v, True, True)["softmax"], neox.model_weights) < GAP
    bert = models.load("hf:" + tiny_folder("bert")).head_qkv(TEXT, 0, 1)
    assert gap(steps(bert.x, bert.q, bert.k, bert.v)["softmax"], bert.model_weights) < GAP
    distil = models.load("hf:" + tiny_folder("distilbert")).head_qkv(TEXT, 0, 0)  # from the capture's record
    assert gap(steps(distil.x, distil.q, distil.k, distil.v)["softmax"], distil.model_weights) < GAP
    with pytest.raises(ValueError, match="reads any other encoder's from the capture, not for the deberta-v2 layout"):
        models.load("hf:" + tiny_folder("deberta-v2")).head_qkv(TEXT, 0, 0)  # DeBERTa-v2 bypasses the registry


def test_decoder_cache_is_transformers_own_and_measures_what_the_formula_says(tiny_folder):
    m = models.load("hf:" + tiny_folder("llama"))
    ids, _ = m.encode(TEXT)
    cached = list(m.steps(ids, 6))
    uncached = [s.token for s in m.steps(ids, 6, use_cache=False)]
    assert [s.token for s in cached] == uncached
    cache = cached[-1].cache
    assert isinstance(cache.inner, DynamicCache) and cache.keys[0].shape == (1, 2, ids.shape[1] + 5, 8)
    per_token = kv_bytes_per_token(m.n_layers, m.kv_heads, m.head_dim, 4)
    assert per_token == 2 * 2 * 2 * 8 * 4
    assert all(s.cache is cache for s in cached)
    assert cache.nbytes() == per_token * cache.seq_len() == per_token * (ids.shape[1] + 5)


@pytest.mark.parametrize("name", ENC_DEC)
def test_encoder_decoder_three_attentions_equal_output_attentions(name, tiny_folder, monkeypatch):
    monkeypatch.setattr(encdec, "MAX_NEW", 6)
    folder = tiny_folder(name)
    m = models.load("hf:" + folder)
    tok = AutoTokenizer.from_pretrained(folder)
    ref = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager").eval()
    enc = tok(TEXT, return_tensors="pt")
    start = ref.config.decoder_start_token_id
    with torch.no_grad():
        written = ref.generate(**enc, max_new_tokens=6, do_sample=False, num_beams=1, no_repeat_ngram_size=0,
                               repetition_penalty=1.0, min_length=0, forced_bos_token_id=None,
                               forced_eos_token_id=None)  # (1, 1 + n): transformers' own greedy decoding
    target = tok(text_target="2021-03-03", add_special_tokens=False)["input_ids"]
    for text_b, fed in ((None, written[:, :-1]), ("2021-03-03", torch.tensor([[start, *target]]))):
        tr = m.attend(TEXT, text_b)
        with torch.no_grad():
            out = ref(**enc, decoder_input_ids=fed, output_attentions=True)
        assert tr.kind == "cross" and set(tr.parts) == {"encoder", "decoder"}
        assert tr.tokens == tok.convert_ids_to_tokens(fed[0].tolist())
        assert tr.key_tokens == tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
        assert gap(tr.weights, stacked(out.cross_attentions)) < GAP
        assert tr.parts["encoder"].kind == "self" and gap(tr.parts["encoder"].weights,
                                                         stacked(out.encoder_attentions)) < GAP
        assert tr.parts["decoder"].kind == "causal" and gap(tr.parts["decoder"].weights,
                                                           stacked(out.decoder_attentions)) < GAP
    assert m.attend(TEXT).output == tok.decode(written[0, 1:], skip_special_tokens=True)


def test_beam_hypotheses_score_what_the_model_scores(tiny_folder):
    folder = tiny_folder("marian")
    m = models.load("hf:" + folder)
    enc, _ = m.encode(TEXT)
    hyps = m.search(enc, 3)
    assert [h.finished for h in hyps] == sorted((h.finished for h in hyps), reverse=True)
    assert m.search(enc, 1)[0].ids == m.search(enc, 1)[0].ids
    ref = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager").eval()
    for h in hyps:
        fed = torch.tensor([[m.start, *h.ids[:-1]]])
        with torch.no_grad():
            logp = ref(**enc, decoder_input_ids=fed).logits[0].log_softmax(-1)  # (t, V)
        assert abs(float(logp[torch.arange(len(h.ids)), list(h.ids)].sum()) - h.score) < 1e-4
    written = m.hypotheses(TEXT, 3)
    assert [w.score for w in written] == [h.score for h in hyps]
    with pytest.raises(ValueError, match="beam width from 1"):
        m.hypotheses(TEXT, 99)


def test_switch_transformers_writes_greedily_and_searches_as_the_model_scores(tmp_path):
    """Switch Transformers' decoder reads its encoder's router logits from the encoder's own output: the search
    (greedy and beam) hands that output on, one row per hypothesis. Greedy writing is transformers' own greedy
    generate; each beam hypothesis's score is the reference model's teacher-forced log-probability."""
    from bench.tiny_any import save

    folder = save("switch_transformers", "seq2seq", tmp_path / "m", num_decoder_layers=2)
    m = models.load("hf:" + folder)
    enc, _ = m.encode(TEXT)
    ref = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        want = ref.generate(**enc, max_new_tokens=m.max_new, do_sample=False, num_beams=1, min_length=0,
                            decoder_start_token_id=m.start, eos_token_id=m.eos)[0, 1:].tolist()
    assert list(m.search(enc, 1)[0].ids) == want
    hyps = m.search(enc, 3)
    assert len(hyps) == 3
    for h in hyps:
        fed = torch.tensor([[m.start, *h.ids[:-1]]])
        with torch.no_grad():
            logp = ref(**enc, decoder_input_ids=fed).logits[0].log_softmax(-1)  # (t, V)
        assert abs(float(logp[torch.arange(len(h.ids)), list(h.ids)].sum()) - h.score) < 1e-4
    assert m.attend(TEXT).tokens[0] == m.tokenizer.convert_ids_to_tokens([m.start])[0]


@pytest.mark.parametrize("name", ["vit", "deit"])
def test_vision_attention_and_patch_order(name, tiny_folder):
    folder = tiny_folder(name)
    m = models.load("hf:" + folder)
    image = np.random.default_rng(0).integers(0, 17, (8, 8)).astype(np.float32)  # 0..16, as digits are
    tr = m.attend(image)
    proc = AutoImageProcessor.from_pretrained(folder)
    ref = AutoModelForImageClassification.from_pretrained(folder, attn_implementation="eager").eval()
    pixels = proc(image[..., None], return_tensors="pt")["pixel_values"]  # (1, 1, 8, 8): the processor's own path
    with torch.no_grad():
        out = ref(pixel_values=pixels, output_attentions=True)
        embedded = ref.base_model.embeddings.patch_embeddings(pixels)  # (1, 16, D)
        conv = ref.base_model.embeddings.patch_embeddings.projection
        n_special = 2 if name == "deit" else 1
        for r in range(4):
            for c in range(4):
                patch = conv(pixels[:, :, 2 * r:2 * r + 2, 2 * c:2 * c + 2])[0, :, 0, 0]  # (D,)
                assert tr.tokens[n_special + r * 4 + c] == f"r{r}c{c}"
                assert torch.allclose(embedded[0, r * 4 + c], patch, atol=1e-6)
    assert tr.tokens[:n_special] == (["[CLS]", "[DIST]"] if name == "deit" else ["[CLS]"])
    assert gap(tr.weights, stacked(out.attentions)) < GAP
    probs = m.predict(image)
    assert abs(sum(p for _, p in probs) - 1) < 1e-5 and tr.output.startswith(probs[0][0])
    # a colour image twice the size is brought to the model's one channel and 8x8 pixels
    assert m.to_model_frame(np.zeros((16, 16, 3))).shape == (8, 8, 1)
    with pytest.raises(ValueError, match="reads images, not text"):
        m.attend("a sentence")


def test_a_family_it_cannot_show_names_what_it_can(tmp_path):
    from transformers import Wav2Vec2Config

    Wav2Vec2Config(num_hidden_layers=1).save_pretrained(tmp_path / "w2v")  # speech: not read as a text model
    with pytest.raises(ValueError, match="is a model of type wav2vec2.*shows text encoders.*vision transformers"):
        models.load(f"hf:{tmp_path / 'w2v'}")
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}))
    with pytest.raises(ValueError, match="does not know.*shows text encoders"):
        models.load(f"hf:{tmp_path / 'odd'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Could not load"):
        models.load(f"hf:{tmp_path / 'empty'}")


def test_a_decoder_without_its_head_attends_but_does_not_write(tmp_path, tiny_folder):
    from transformers import LlamaModel

    folder = tmp_path / "base"
    shutil.copytree(tiny_folder("llama"), folder)
    AutoModelForCausalLM.from_pretrained(folder).base_model.save_pretrained(folder)
    assert json.loads((folder / "config.json").read_text())["architectures"] == [LlamaModel.__name__]
    m = models.load(f"hf:{folder}")
    assert not m.lm and "no language-model head" in m.label
    assert m.attend(TEXT).kind == "causal"
    with pytest.raises(ValueError, match="no language-model head"):
        m.attend(TEXT, new_tokens=2)


def test_built_ins_are_listed_only_when_their_folder_is_there(tmp_path, monkeypatch, tiny_folder):
    monkeypatch.setattr(models.folders, "WEIGHTS", tmp_path)  # where the built-in folders are looked for
    assert not {"gpt", "vit", "seq2seq-transformer"} & set(models.available())
    with pytest.raises(ValueError, match="The built-in 'gpt' is not in this copy"):
        models.load("gpt")
    for key, family in (("gpt", "llama"), ("vit", "vit"), ("seq2seq-transformer", "marian")):
        shutil.copytree(tiny_folder(family), tmp_path / key)
    assert {"gpt", "vit", "seq2seq-transformer"} <= set(models.available())
    gpt = models.load("gpt")
    assert gpt.family == "decoder" and gpt.label.startswith("gpt (llama decoder")
    assert models.load("vit").family == "vision" and models.load("seq2seq-transformer").family == "encoder-decoder"


def test_parts_must_be_traces():
    w = np.full((1, 1, 2, 2), 0.5, np.float32)
    inner = AttentionTrace(["a", "b"], ["a", "b"], w, "self")
    outer = AttentionTrace(["a", "b"], ["a", "b"], w, "cross", parts={"encoder": inner})
    assert list(outer.stacks()) == ["cross", "encoder"] and outer.stacks()["encoder"] is inner
    with pytest.raises(ValueError, match="parts"):
        AttentionTrace(["a", "b"], ["a", "b"], w, "cross", parts={"encoder": w})
