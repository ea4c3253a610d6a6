"""An encoder-decoder's KV caches (ui.kv_cache_encdec, experiments.kv_cache.write_encdec): its decoder writes
greedily through transformers' EncoderDecoderCache, the same tokens transformers' own greedy generate writes, and
after every step its self-attention cache holds 2 · kv heads · head size · bytes × decoder layers × positions
(the formula, from the config's sizes) and its cross-attention cache the same for the encoder's tokens, made at the
first step and never grown. Tiny random BART, T5 (its own d_kv), Switch Transformers (T5 with routed experts),
bert2bert (two BERTs joined) and T5Gemma (its decoder's own config, with key/value groups); the KV cache view
shows the section for the sidebar's BART."""
import pytest
import torch
from streamlit.testing.v1 import AppTest

import models
from bench.tiny_any import save
from experiments import kv_cache as E

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

TEXT, N = "The cat sat.", 6


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, str]:
    return {t: save(t, "seq2seq", tmp_path_factory.mktemp(t.replace("-", "_")) / "m", **extra)
            for t, extra in (("bart", {}), ("t5", {"d_kv": 6, "head_dim": 6}), ("encoder-decoder", {}),
                             ("switch_transformers", {"num_decoder_layers": 2, "d_kv": 8}), ("t5gemma", {}))}


@pytest.mark.parametrize("model_type", ["bart", "t5", "encoder-decoder", "switch_transformers", "t5gemma"])
def test_both_caches_equal_the_formula_at_every_step_and_the_tokens_are_generates(model_type, folders):
    m = models.load("hf:" + folders[model_type])
    w = E.write_encdec(m, TEXT, N)
    layers, kv, hd = m.decoder_shape()
    assert (layers, hd) == (2, 6 if model_type == "t5" else 8)
    per = 2 * kv * hd * 4                                                    # float32
    assert w.positions == list(range(1, len(w.written) + 1))
    # the decoder's config, read here: T5Gemma's every other layer keeps the last W - 1 positions of a W-token window
    cfg = m.config.decoder if model_type in ("encoder-decoder", "t5gemma") else m.config
    types = getattr(cfg, "layer_types", None) or ["full_attention"] * layers
    windows = [cfg.sliding_window if t == "sliding_attention" else None for t in types]
    assert (None not in windows[:1]) == (model_type == "t5gemma")             # (its first layer slides, W = 3)
    assert w.measured == [per * sum(t if x is None else min(t, x - 1) for x in windows) for t in w.positions]
    if model_type == "t5gemma":
        assert "1 decoder layer with a 3-token sliding window keeps its last 2" in E.formula_encdec(
            m, 4, w.positions[-1], len(w.source))
    assert w.cross == [per * layers * len(w.source)] * len(w.written)
    enc, _ = m.encode(TEXT)
    with torch.no_grad():
        want = m.model.generate(**enc, max_new_tokens=N, do_sample=False, num_beams=1, min_length=0,
                                decoder_start_token_id=m.start, eos_token_id=m.eos, forced_eos_token_id=None,
                                forced_bos_token_id=None)[0, 1:].tolist()
    assert w.written == want[:len(w.written)] and len(w.written) == min(N, len(want))


def test_the_kv_cache_view_shows_an_encoder_decoders_two_caches(folders):
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["model"] = "hf:"
    at.session_state["hf_spec"] = folders["bart"]
    at.run()
    at.switch_page("views/kv_cache.py").run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    assert "An encoder-decoder's caches (transformers' EncoderDecoderCache)" in [h.value for h in at.header]
    said = " ".join(s.value for s in at.success)
    assert "Self-attention cache after 16 positions: 8 KiB measured from its tensors; cross-attention cache: " in said
    assert "× 2 decoder layers × 16 positions" in said
    # the tiny random BART writes <s> at every step: all 16 are said, counted, none cut off
    assert [t.value for t in at.text if "→" in t.value] == ["The house is wonderful. → [special tokens only: <s> ×16]"]


def test_without_a_language_model_head_each_view_says_what_it_can_do_instead(tmp_path):
    """A BART saved without its head cannot write: the KV cache view says so without the Seq2seq view's advice to
    type the target (it has no target box); the search that feeds Heads and Seq2seq gives that advice."""
    from transformers import BartModel

    from bench.tiny_any import config, tokenizer
    from limits.errors import UserError

    torch.manual_seed(0)
    BartModel(config("bart")).save_pretrained(tmp_path)
    tokenizer().save_pretrained(tmp_path)
    m = models.load(f"hf:{tmp_path}")
    with pytest.raises(UserError, match="cannot write: pick a folder saved from a \\*ForConditionalGeneration model.$"):
        E.write_encdec(m, TEXT, N)
    with pytest.raises(UserError, match="or type the target in the second sentence box to feed it instead.$"):
        m.search(m.encode(TEXT)[0], 1)
