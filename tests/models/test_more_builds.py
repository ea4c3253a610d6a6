"""Architectures the tiny builder (bench.tiny_any) could not size before, each loaded as a user's folder and checked
against transformers' own eager model: DBRX (its attention inside a norm-attention-norm wrapper, q/k/v clipped),
Dots1, Dots3 and Cohere Compass, the language models of Gemma 3n and Gemma 4 (per-layer sizes), Zamba and Zamba2 (a
shared attention block in their hybrid layers), the causal LMs of Llama 4 and Qwen3.5 (their language model's
config), Qwen4-exp's language model (its token indexer's budget), NeoMME (heads wide enough for its partial
rotary) and ESM C (no key/value groups). The attention equals eager output_attentions within 1e-6 at the layers
that attend; direct logit attribution sums to the logit where it splits the residual (DBRX, whose wrapper adds the
attention to the residual itself; Gemma 4) and refuses Zamba's, whose attention's output passes the shared block's
MLP and a projection before it joins the residual, and Gemma 3n's and Qwen4-exp's, which keep several residual
streams."""
import numpy as np
import pytest
import torch

import models
from bench.tiny_any import model_class, save
from experiments import logit_lens
from limits.errors import UserError

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

TEXT = "abcab"
BUILT = ["dbrx", "dots1", "cohere_compass_text", "gemma3n_text", "gemma4_text", "dots3_note_text", "zamba", "zamba2",
         "llama4", "qwen3_5"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, str]:
    return {t: save(t, "causal", tmp_path_factory.mktemp(t) / "m") for t in BUILT}


@pytest.mark.parametrize("model_type", BUILT)
def test_the_attention_is_the_models_own_eager_attention(model_type, folders):
    m = models.load("hf:" + folders[model_type])
    trace = m.attend(TEXT)
    ref = model_class(model_type, "causal").from_pretrained(folders[model_type], attn_implementation="eager").eval()
    with torch.no_grad():
        out = ref(input_ids=m.encode(TEXT)[0], output_attentions=True).attentions
    want = [a for a in out if a is not None]                             # a hybrid's layers that attend
    assert len(want) == m.n_layers and trace.weights.shape[0] == m.n_layers
    for layer, a in enumerate(want):
        assert float(np.abs(trace.weights[layer] - a[0].float().numpy()).max()) <= 1e-6, (model_type, layer)


def test_qwen4_exps_token_indexer_drops_keys_as_the_model_does(tmp_path):
    """Qwen4-exp's attending layer reads only the keys its token indexer (QSA) picks, a budget of 16 here: on 51
    tokens the map equals eager output_attentions, its first 16 rows keep every earlier key and its last drops some."""
    folder = save("qwen4_exp_text", "causal", tmp_path / "m")
    m, text = models.load("hf:" + folder), "The cat sat on the mat and the dog sat on the log."
    w = m.attend(text).weights[0]                                           # (H, T, T) its one attending layer
    ref = model_class("qwen4_exp_text", "causal").from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        own = [a for a in ref(input_ids=m.encode(text)[0], output_attentions=True).attentions if a is not None]
    assert len(own) == 1 and float(np.abs(w - own[0][0].numpy()).max()) <= 1e-6
    causal = np.tril(np.ones(w.shape[-2:], dtype=bool))                    # (T, T)
    assert w.shape[-1] == 51 and (w[:, :16][:, causal[:16]] > 0).all() and (w[:, -1][:, causal[-1]] == 0).any()


def test_neommes_masked_lm_with_a_quarter_of_each_head_rotated_is_its_own_attention(tmp_path):
    """NeoMME (a masked LM) rotates a quarter of each head on its full-attention layers: with heads of 16 it builds,
    and its attention equals eager output_attentions."""
    folder = save("neomme", "masked", tmp_path / "m")
    m = models.load("hf:" + folder)
    trace = m.attend(TEXT)
    ref = model_class("neomme", "masked").from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        own = ref(**{k: v for k, v in m.tokenizer(TEXT, return_tensors="pt").items() if k != "token_type_ids"},
                  output_attentions=True).attentions
    assert len(own) == trace.weights.shape[0] == 2
    assert max(float(np.abs(trace.weights[i] - a[0].numpy()).max()) for i, a in enumerate(own)) <= 1e-6


def test_esm_cs_masked_lm_without_key_value_groups_is_its_own_attention(tmp_path):
    """ESM C (a protein masked LM) refuses key/value groups: the builder gives it as many key/value heads as heads,
    and its attention on a protein's letters equals eager output_attentions."""
    folder, protein = save("esmc", "masked", tmp_path / "m"), "MKTAYIAK"
    m = models.load("hf:" + folder)
    ref = model_class("esmc", "masked").from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        own = ref(**{k: v for k, v in m.tokenizer(protein, return_tensors="pt").items() if k != "token_type_ids"},
                  output_attentions=True).attentions
    weights = m.attend(protein).weights                                     # (L, H, T, T)
    assert len(own) == weights.shape[0] == 2 and weights.shape[-1] == len(protein) + 2  # <s> ... </s>
    assert max(float(np.abs(weights[i] - a[0].numpy()).max()) for i, a in enumerate(own)) <= 1e-6


@pytest.mark.parametrize("model_type", ["dbrx", "gemma4_text"])
def test_the_residual_split_sums_to_the_logit(model_type, folders):
    """DBRX's wrapper adds the attention to the residual itself; Gemma 4's final norm is found among the norms of its
    per-layer inputs (256 wide, where its residual is 32)."""
    m = models.load("hf:" + folders[model_type])
    d = logit_lens.decompose(m, TEXT)
    with torch.no_grad():
        own = m.model(input_ids=m.encode(TEXT)[0]).logits[0, -1, d.target_id]
    assert abs(sum(d.parts.values()) - float(own)) <= 1e-4 and abs(float(own)) > 1e-3


@pytest.mark.parametrize("model_type", ["gemma3n_text", "qwen4_exp_text"])
def test_several_residual_streams_are_refused_in_one_sentence(model_type, folders, tmp_path):
    """Gemma 3n's AltUp and Qwen4-exp's hyper-connections widen the residual into several streams (4 × 32 here):
    refused for what they are, not for an output projection the split could not find."""
    folder = folders.get(model_type) or save(model_type, "causal", tmp_path / "m")
    with pytest.raises(UserError, match=rf"^{model_type} keeps several residual streams and mixes them at every layer"):
        logit_lens.decompose(models.load("hf:" + folder), TEXT)


@pytest.mark.parametrize("model_type", ["zamba", "zamba2"])
def test_zambas_split_is_refused_in_one_sentence(model_type, folders):
    with pytest.raises(UserError, match=rf"^{model_type}'s attention sits in a block of its own within the layers"):
        logit_lens.decompose(models.load("hf:" + folders[model_type]), TEXT)


def test_next_token_on_zamba_keeps_its_probabilities_and_says_why_in_the_split_tab(folders):
    """The split's refusal comes from the model's first split (a forward pass), not from its config: the view still
    shows the probabilities, and the split tabs say the sentence instead of stopping the page."""
    from streamlit.testing.v1 import AppTest

    for tab in ("Probabilities", "Direct logit attribution"):
        at = AppTest.from_file("../../app.py", default_timeout=300)
        at.session_state["model"], at.session_state["hf_spec"] = "hf:", folders["zamba"]
        at.session_state["nt_tab"] = tab
        at.run()
        at.switch_page("views/next_token.py").run()
        assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
        said = " ".join(i.value for i in at.info)
        if tab == "Probabilities":
            assert at.get("plotly_chart") and "block of its own" not in said
        else:
            assert "zamba's attention sits in a block of its own within the layers that attend" in said
