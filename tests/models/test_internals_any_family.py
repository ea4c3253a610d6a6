"""Inside a head on decoders with no hand-written layout (OPT, Phi-3, Gemma, Qwen3, GPT-NeoX, OLMo 2, Cohere) and
encoders other than BERT's (XLM-R, ModernBERT, DistilBERT, ALBERT): q, k and v come from models.capture's record.
Checked against paths written here: the model's weights are eager output_attentions of the same folder loaded
plainly by transformers; softmax(q kᵀ/√d + causal mask, window) · v from the record equals torch's own
scaled_dot_product_attention on them; where the layer has separate projections, v is its v_proj applied to the x the
view shows. What the view's steps cannot show is refused in one sentence."""
import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModel, AutoModelForCausalLM

import models
from bench.tiny_any import save
from limits.errors import UserError

TEXT = "The cat sat on"
FAMILIES = ["opt", "phi3", "gemma", "qwen3", "gpt_neox", "olmo2", "cohere"]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_head_is_the_models_own(family, tmp_path):
    folder = save(family, "causal", tmp_path)
    dec = models.load("hf:" + folder)
    layer, head = 1, 3
    d = dec.head_qkv(TEXT, layer, head)
    ids, _ = dec.encode(TEXT)
    plain = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        eager = plain(input_ids=ids, output_attentions=True).attentions[layer][0, head]      # (T, T)
    torch.testing.assert_close(torch.from_numpy(d.model_weights), eager, rtol=0, atol=1e-6)
    q, k, v = (torch.from_numpy(t)[None, None] for t in (d.q, d.k, d.v))                     # (1, 1, T, d)
    T = len(d.tokens)
    allowed = torch.ones(T, T, dtype=torch.bool).tril()          # causal, and a sliding window where the layer has one
    if d.window:
        allowed &= ~torch.ones(T, T, dtype=torch.bool).tril(-d.window)
    z = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=None if d.scale else 1.0)[0, 0]  # (T, d)
    torch.testing.assert_close(z, eager @ torch.from_numpy(d.v), rtol=1e-4, atol=1e-5)
    attn = plain.get_submodule("model.decoder.layers.1.self_attn" if family == "opt" else
                               "gpt_neox.layers.1.attention" if family == "gpt_neox" else "model.layers.1.self_attn")
    if hasattr(attn, "v_proj"):  # x is what the projections read
        with torch.no_grad():
            v_ref = attn.v_proj(torch.from_numpy(d.x)).view(len(d.tokens), -1, d.v.shape[-1])[:, d.kv_head]
        torch.testing.assert_close(v_ref, torch.from_numpy(d.v), rtol=1e-5, atol=1e-6)
    assert d.causal and d.rope == (family != "opt") and d.scale == (family != "opt")  # OPT scales q in q_proj


@pytest.mark.parametrize("family", ["xlm-roberta", "camembert", "modernbert", "distilbert", "albert"])
def test_an_encoders_head_is_the_models_own(family, tmp_path):
    folder = save(family, "masked", tmp_path)
    enc = models.load("hf:" + folder)
    d = enc.head_qkv(TEXT, 1, 2)
    ids = enc.tokenizer(TEXT, return_tensors="pt")
    plain = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        eager = plain(**ids, output_attentions=True).attentions[1][0, 2]                     # (T, T)
    torch.testing.assert_close(torch.from_numpy(d.model_weights), eager, rtol=0, atol=1e-6)
    q, k, v = (torch.from_numpy(t)[None, None] for t in (d.q, d.k, d.v))                     # (1, 1, T, d)
    z = F.scaled_dot_product_attention(q, k, v)[0, 0]                                        # (T, d) no mask
    torch.testing.assert_close(z, eager @ torch.from_numpy(d.v), rtol=1e-4, atol=1e-5)
    assert not d.causal and d.kv_head is None and d.scale


@pytest.mark.parametrize("family, extra", [("ctrl", {}), ("opt", {"do_layer_norm_before": False})])
def test_x_is_what_the_attention_reads(family, extra, tmp_path):
    """CTRL's norm before attention is its layernorm1; a post-norm OPT (as opt-350m) norms after attention, so its
    attention reads the layer's input itself: the recorded values are the value projection of the x shown."""
    dec = models.load("hf:" + save(family, "causal", tmp_path, **extra))
    d = dec.head_qkv(TEXT, 1, 0)
    plain = AutoModelForCausalLM.from_pretrained(str(tmp_path), attn_implementation="eager").eval()
    attn = plain.get_submodule("transformer.h.1.multi_head_attention" if family == "ctrl" else
                               "model.decoder.layers.1.self_attn")
    proj = attn.Wv if family == "ctrl" else attn.v_proj
    with torch.no_grad():
        v_ref = proj(torch.from_numpy(d.x)).view(len(d.tokens), -1, d.v.shape[-1])[:, 0]          # (T, d)
    torch.testing.assert_close(v_ref, torch.from_numpy(d.v), rtol=1e-5, atol=1e-6)


def test_a_half_precision_head_opens(tmp_path, bfloat16_here):
    """bfloat16 weights round the recompute by ~1e-2: the check allows it rather than refusing every head."""
    dec = models.load("hf:" + save("phi", "causal", tmp_path), dtype="bfloat16")
    assert dec.dtype == "bfloat16"
    d = dec.head_qkv(TEXT, 0, 1)
    assert d.model_weights.shape == (len(d.tokens), len(d.tokens))


def test_capped_scores_get_a_sentence_and_a_scale_of_its_own_opens(tmp_path):
    """Gemma 2 caps its scores: refused in one sentence. Mistral 4 multiplies them by YaRN's attention factor (0.78
    where 1/√d_k is 0.35): its head opens, its scale step multiplies by that factor, and the softmax is the model's
    own weights (it said 'scales its scores by 0.7799 rather than 1/√d_k', with nothing drawn)."""
    from analysis.inside_head import checks, steps

    dec = models.load("hf:" + save("gemma2", "causal", tmp_path / "g"))  # query_pre_attn_scalar and a cap on scores
    with pytest.raises(UserError, match="caps its attention scores"):
        dec.head_qkv(TEXT, 0, 0)
    dec = models.load("hf:" + save("mistral4", "causal", tmp_path / "m"))
    d = dec.head_qkv(TEXT, 0, 1)
    assert isinstance(d.scale, float) and abs(d.scale * d.q.shape[-1] ** 0.5 - 1) > 0.5   # not 1/√d_k
    gaps = checks(d, steps(d.x, d.q, d.k, d.v, d.scale, d.causal, d.window))
    assert gaps["model"] < 1e-5 and gaps["sdpa"] < 1e-5
