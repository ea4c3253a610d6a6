"""Activation patching (experiments.patching) on tiny random GPT-2 and Llama models (bench.tiny_families, 1 or 2
layers), against forward hooks written in this file on the transformers models loaded on their own (not through
models.gates)."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

import models
from bench.tiny_families import FAMILIES, _tokenizer
from experiments.patching import patch_heads, patch_residual, restored

CLEAN, CORRUPT = "When Mary met John, John gave a cup to", "When John met Mary, Mary gave a cup to"
ANSWER, WRONG = "M", "J"  # one character is one token in these tokenizers
HS = 8


pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py


@pytest.fixture(scope="module")
def folders(tiny_folder):
    """(family, layers) -> a tiny random GPT-2 or Llama (bench.tiny_families, d_model 32, 4 heads) of that depth."""
    return lambda family, layers: tiny_folder(family, layers=layers, positions=64)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_all_heads_of_one_layer_restore_exactly_one_and_none_restore_zero(family, folders):
    m = models.load("hf:" + folders(family, 1))
    assert restored(m, CLEAN, CORRUPT, ANSWER, WRONG, {0: [0, 1, 2, 3]}) == 1.0
    assert restored(m, CLEAN, CORRUPT, ANSWER, WRONG, {}) == 0.0


def _diff(model, ids, a, b) -> float:
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, -1]
    return float(logits[a] - logits[b])


@pytest.mark.parametrize("family, path", [("gpt2", "transformer.h.{l}.attn.c_proj"),
                                          ("llama", "model.layers.{l}.self_attn.o_proj")])
def test_each_head_score_equals_a_hand_written_hook(family, path, folders):
    folder = folders(family, 2)
    p = patch_heads(models.load("hf:" + folder), CLEAN, CORRUPT, ANSWER, WRONG)
    ref = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    tok = _tokenizer(FAMILIES[family])
    clean, corrupt = (torch.tensor([tok(t)["input_ids"]]) for t in (CLEAN, CORRUPT))
    a, b = tok.convert_tokens_to_ids(ANSWER), tok.convert_tokens_to_ids(WRONG)
    kept = {}
    hooks = [ref.get_submodule(path.format(l=layer)).register_forward_pre_hook(
        lambda mod, args, layer=layer: kept.__setitem__(layer, args[0].clone())) for layer in range(2)]
    clean_diff = _diff(ref, clean, a, b)
    for h in hooks:
        h.remove()
    corrupt_diff = _diff(ref, corrupt, a, b)
    assert p.clean_diff == pytest.approx(clean_diff, abs=1e-5)
    assert p.corrupt_diff == pytest.approx(corrupt_diff, abs=1e-5)
    expected = np.zeros((2, 4))
    for layer in range(2):
        for head in range(4):
            cols = slice(head * HS, (head + 1) * HS)

            def swap(mod, args, layer=layer, cols=cols):
                x = args[0].clone()                        # (1, T, H*hs)
                x[..., cols] = kept[layer][..., cols]
                return (x,)
            hook = ref.get_submodule(path.format(l=layer)).register_forward_pre_hook(swap)
            expected[layer, head] = (_diff(ref, corrupt, a, b) - corrupt_diff) / (clean_diff - corrupt_diff)
            hook.remove()
    assert np.abs(p.scores - expected).max() < 1e-4
    assert np.abs(expected).max() > 0.01  # the heads matter here: the comparison can fail


def test_residual_patching_equals_a_hook_on_the_layer_input(folders):
    folder = folders("gpt2", 2)
    r = patch_residual(models.load("hf:" + folder), CLEAN, CORRUPT, ANSWER, WRONG)
    ref = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    tok = _tokenizer(FAMILIES["gpt2"])
    clean, corrupt = (torch.tensor([tok(t)["input_ids"]]) for t in (CLEAN, CORRUPT))
    a, b = tok.convert_tokens_to_ids(ANSWER), tok.convert_tokens_to_ids(WRONG)
    with torch.no_grad():
        hidden = ref(input_ids=clean, output_hidden_states=True).hidden_states  # embeddings, then each layer's output
    clean_diff, corrupt_diff = _diff(ref, clean, a, b), _diff(ref, corrupt, a, b)
    layer, pos = 1, len(CLEAN) - 1

    def swap(mod, args, kwargs):
        x = (args[0] if args else kwargs["hidden_states"]).clone()
        x[:, pos] = hidden[layer][:, pos]
        return ((x,) + args[1:], kwargs) if args else (args, {**kwargs, "hidden_states": x})
    hook = ref.transformer.h[layer].register_forward_pre_hook(swap, with_kwargs=True)
    expected = (_diff(ref, corrupt, a, b) - corrupt_diff) / (clean_diff - corrupt_diff)
    hook.remove()
    assert r.scores.shape == (2, len(CLEAN)) and r.scores[layer, pos] == pytest.approx(expected, abs=1e-4)
    same = [i for i, (x, y) in enumerate(zip(CLEAN, CORRUPT)) if x == y]
    # the embeddings there are the same in both runs: nothing restored, up to float32 rounding of batched runs
    # (exactly 0 on most kernels; 3.9e-6 on AVX2's, where a batch's rows may be summed in another order)
    assert np.abs(r.scores[0, same]).max() < 1e-5


def test_concurrent_patching_calls_each_get_their_own_result(folders):
    m = models.load("hf:" + folders("gpt2", 2))
    pairs = [(CLEAN, CORRUPT), ("Mary saw John; John", "John saw Mary; Mary"), ("ab MJ", "ab JM"),
             ("Then Mary and John sat; John paid", "Then John and Mary sat; Mary paid")]
    alone = [patch_heads(m, c, k, ANSWER, WRONG).scores for c, k in pairs]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda i: (i, patch_heads(m, *pairs[i], ANSWER, WRONG).scores), [0, 1, 2, 3] * 2))
    assert all(np.allclose(s, alone[i], atol=1e-6) for i, s in together)
    assert not np.allclose(alone[0], alone[1], atol=1e-3)


def test_bad_input_gets_one_sentence(folders):
    m = models.load("hf:" + folders("gpt2", 1))
    with pytest.raises(ValueError, match="text has 3 tokens and the corrupted text 4.* token 2: c against"):
        patch_heads(m, "abc", "abdd", ANSWER, WRONG)
    with pytest.raises(ValueError, match="are the same: change a word"):
        patch_heads(m, "abc", "abc", ANSWER, WRONG)
    with pytest.raises(ValueError, match=r"answer 'Mary' is 4 tokens here \('M', 'a', 'r', 'y'\): give one token, "
                                         r"e.g. 'M' \(mind"):
        patch_heads(m, CLEAN, CORRUPT, "Mary", WRONG)
    with pytest.raises(ValueError, match="the same token"):
        patch_heads(m, CLEAN, CORRUPT, ANSWER, ANSWER)
    with pytest.raises(ValueError, match="loaded without a head"):
        patch_heads(models.load("bert"), CLEAN, CORRUPT, ANSWER, WRONG)
    with pytest.raises(ValueError, match="this model reads images"):  # it predicts a class, but of an image
        patch_heads(models.load("vit"), CLEAN, CORRUPT, ANSWER, WRONG)


def test_gradient_scores_are_the_slope_of_the_logit_difference_and_rho_is_spearmans(folders):
    from scipy.stats import spearmanr

    from experiments.patching import gradient_scores, rank_correlation
    from models import gates

    m = models.load("hf:" + folders("llama", 2))
    grads = gradient_scores(m, CLEAN, ANSWER, WRONG)
    tok = m.tokenizer
    ids = m.encode(CLEAN)[0]
    a, b = tok.convert_tokens_to_ids(ANSWER), tok.convert_tokens_to_ids(WRONG)
    eps = 1e-3
    for layer, head in [(0, 1), (1, 3)]:
        ends = []
        for xi in (1 + eps, 1 - eps):
            g = [torch.ones(4, dtype=torch.float64) for _ in range(2)]
            g[layer][head] = xi
            with gates.gated(m.model, g):
                ends.append(_diff(m.model, ids, a, b))
        assert grads[layer, head] == pytest.approx(abs(ends[0] - ends[1]) / (2 * eps), rel=1e-2, abs=1e-5)
    x, y = np.random.default_rng(0).normal(size=(2, 3, 4))
    y[0, 0] = y[0, 1]  # a tie
    assert rank_correlation(x, y) == pytest.approx(spearmanr(x.ravel(), y.ravel()).statistic)


def test_encoder_decoder_and_classifier_use_their_own_logit_difference(tiny_folder, tmp_path):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, BertConfig, BertForSequenceClassification

    t5 = models.load("hf:" + tiny_folder("t5"))
    p = patch_heads(t5, "abcd", "abce", "x", "y")
    ref = AutoModelForSeq2SeqLM.from_pretrained(tiny_folder("t5")).eval()
    tok = AutoTokenizer.from_pretrained(tiny_folder("t5"))
    with torch.no_grad():
        logits = ref(**tok("abcd", return_tensors="pt"),
                     decoder_input_ids=torch.tensor([[ref.config.decoder_start_token_id]])).logits[0, -1]
    x, y = tok.convert_tokens_to_ids("x"), tok.convert_tokens_to_ids("y")
    assert p.clean_diff == pytest.approx(float(logits[x] - logits[y]), abs=1e-5)
    assert p.scores.shape == (6, 4) and p.rows[-1] == "decoder 1 cross" and np.isfinite(p.scores).all()

    tok = _tokenizer(FAMILIES["bert"])
    torch.manual_seed(0)
    clf = BertForSequenceClassification(BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, id2label={0: "neg", 1: "pos"}, label2id={"neg": 0, "pos": 1})).eval()
    clf.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    m = models.load("hf:" + str(tmp_path))  # its classifier kept
    p = patch_heads(m, "good film", "dull film", "pos", "neg")
    with torch.no_grad():
        logits = clf(**tok("good film", return_tensors="pt")).logits[0]
    assert p.metric == "class logit difference"
    assert p.clean_diff == pytest.approx(float(logits[1] - logits[0]), abs=1e-5)
    with pytest.raises(ValueError, match="not one of this classifier's labels: neg, pos"):
        patch_heads(m, "good film", "dull film", "great", "neg")


def test_the_modules_example_runs_as_written_on_the_built_in_gpt():
    import experiments.patching as module

    line, = [line.strip() for line in module.__doc__.splitlines() if line.startswith("    p = patch_heads(")]
    scope = {"patch_heads": patch_heads, "load": models.load}
    exec(line, scope)
    p = scope["p"]
    assert p.scores.shape == (4, 4) and (round(p.clean_diff, 2), round(p.corrupt_diff, 2)) == (1.14, -3.14)


def test_the_gap_warnings_say_one_thing_for_each_way_a_gap_misleads():
    from experiments.patching import Patched, gap_warnings

    def said(clean, corrupt, example=False):
        p = Patched(["a"], ["b"], ["layer 0"], np.array([[0.5]]), clean, corrupt, "logit difference at the last token")
        return gap_warnings(p, "x", "y", example=example)

    assert said(2.0, -1.0) == []
    assert len(said(-1.0, 2.0)) == 1 and "gap is negative" in said(-1.0, 2.0)[0]  # not also "does not prefer"
    assert len(said(-1.0, -3.0)) == 1 and "does not prefer the answer" in said(-1.0, -3.0)[0]
    assert said(-1.0, -3.0)[0].endswith("Press “Use the example for this model” for a pair it gets right.")
    on_it = said(-1.0, -3.0, example=True)[0]  # already the example: not sent back to it
    assert "Use the example" not in on_it and "already this model's example" in on_it
    assert "gap is tiny" in said(1.0, 0.999)[0]
