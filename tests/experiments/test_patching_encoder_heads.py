"""Patching an hf: encoder by the head its load kept (issue: every hf: sequence classifier and masked LM was refused
with "this model predicts no token or class", because the Runner looked for a TaskModel's `head`): the class logit
difference of a BertForSequenceClassification and the logit difference at the mask of an XLM-R masked LM, each head
patched one at a time, equal to a reference written here with forward pre-hooks on the attention output projection
of a private copy loaded straight from the folder."""
import pytest
import torch

import models
from bench.tiny_any import save
from experiments.patching import check, patch_heads
from limits.errors import UserError

CLEAN, CORRUPT = "the film was great, so fine", "the film was awful, so poor"


def reference(net, ids_clean, ids_corrupt, read, ia, iw, heads, hs):
    """Scores [L, H] by hand: record each layer's input to attention.output.dense (B, T, C) on the clean run, then
    for each (layer, head) run the corrupted ids with that head's hs columns replaced by the clean ones."""
    layers = net.base_model.encoder.layer
    kept = {}

    def diff(ids):
        logits = read(net(input_ids=ids).logits)                       # (1, V) or (1, classes)
        return float(logits[0, ia].double() - logits[0, iw].double())

    hooks = [lay.attention.output.dense.register_forward_pre_hook(
        lambda mod, args, i=i: kept.__setitem__(i, args[0].detach().clone())) for i, lay in enumerate(layers)]
    with torch.no_grad():
        clean = diff(ids_clean)                                         # kept[i]: (1, T, C)
    for h in hooks:
        h.remove()
    with torch.no_grad():
        corrupt = diff(ids_corrupt)
    scores = torch.zeros(len(layers), heads, dtype=torch.float64)
    for i, lay in enumerate(layers):
        for h in range(heads):
            def put(mod, args, i=i, h=h):
                x = args[0].clone()                                     # (1, T, C)
                x[..., h * hs:(h + 1) * hs] = kept[i][..., h * hs:(h + 1) * hs]
                return (x,)
            hook = lay.attention.output.dense.register_forward_pre_hook(put)
            with torch.no_grad():
                scores[i, h] = (diff(ids_corrupt) - corrupt) / (clean - corrupt)
            hook.remove()
    return clean, corrupt, scores.numpy()


def test_a_sequence_classifier_is_patched_by_its_class_logit_difference(tmp_path):
    from transformers import AutoModelForSequenceClassification

    folder = save("bert", "classifier", tmp_path, num_labels=2, id2label={0: "neg", 1: "pos"},
                  label2id={"neg": 0, "pos": 1})
    m = models.load("hf:" + folder)
    assert m.predicts == "class"
    p = patch_heads(m, CLEAN, CORRUPT, "pos", "neg")
    assert p.metric == "class logit difference"
    net = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    a, b = (m.tokenizer(t, return_tensors="pt")["input_ids"] for t in (CLEAN, CORRUPT))
    cfg = net.config
    clean, corrupt, scores = reference(net, a, b, lambda x: x, 1, 0, cfg.num_attention_heads,
                                       cfg.hidden_size // cfg.num_attention_heads)
    assert abs(p.clean_diff - clean) < 1e-5 and abs(p.corrupt_diff - corrupt) < 1e-5
    assert abs((p.scores - scores) * (clean - corrupt)).max() < 1e-6  # the patched differences (a tiny random gap)
    with pytest.raises(UserError, match="not one of this classifier's labels: neg, pos"):
        patch_heads(m, CLEAN, CORRUPT, "good", "neg")


def test_a_masked_lm_is_patched_at_its_mask(tmp_path):
    from transformers import AutoModelForMaskedLM

    folder = save("xlm-roberta", "masked", tmp_path)
    m = models.load("hf:" + folder)
    assert m.predicts == "target token"
    clean, corrupt = "the film was great, so <mask>", "the film was awful, so <mask>"
    p = patch_heads(m, clean, corrupt, "a", "b")
    assert p.metric == "logit difference at the mask"
    net = AutoModelForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    a, b = (m.tokenizer(t, return_tensors="pt")["input_ids"] for t in (clean, corrupt))
    at = int((a[0] == m.tokenizer.mask_token_id).nonzero()[-1, 0])
    ia, iw = m.tokenizer.convert_tokens_to_ids(["a", "b"])
    cfg = net.config
    want = reference(net, a, b, lambda x: x[:, at], ia, iw, cfg.num_attention_heads,
                     cfg.hidden_size // cfg.num_attention_heads)
    assert abs(p.clean_diff - want[0]) < 1e-5 and abs(p.corrupt_diff - want[1]) < 1e-5
    assert abs((p.scores - want[2]) * (want[0] - want[1])).max() < 1e-6
    with pytest.raises(UserError, match="write <mask> where the answer goes"):
        patch_heads(m, CLEAN, CORRUPT, "a", "b")


def test_an_encoder_without_a_head_is_refused_for_that_reason():
    m = models.load("bert")
    assert m.next_token_model is None
    with pytest.raises(UserError, match="loaded without a head"):
        check(m)


def test_a_masked_lm_pair_with_its_masks_at_different_places_is_refused(tmp_path):
    m = models.load("hf:" + save("xlm-roberta", "masked", tmp_path))
    with pytest.raises(UserError, match="mask is at token .* and the corrupted text's at token"):
        patch_heads(m, "the film was great, so <mask>", "the <mask> was awful, so fine", "a", "b")


@pytest.mark.parametrize("name", ["toy", "seq2seq-bahdanau"])
def test_a_model_that_is_no_encoder_is_not_told_it_lacks_an_encoders_head(name):
    with pytest.raises(UserError, match="this model's heads are not read that way here"):
        check(models.load(name))


def test_a_bert_style_causal_lm_is_patched_at_the_next_token_after_the_text(tmp_path):
    """BertLMHeadModel (is_decoder), kept as its causal LM: the logit difference of the token after the text, read at
    its last token ([CLS] … without the [SEP] a BERT tokenizer ends it with), as the reference reads it."""
    from transformers import AutoModelForCausalLM, BertTokenizerFast

    folder = save("bert", "causal", tmp_path, is_decoder=True)
    vocab = tmp_path / "vocab.txt"  # a BERT tokenizer of its own, whose end mark is [SEP]
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "was", "great", "awful",
                                "so", "a", "b"]))
    BertTokenizerFast(str(vocab)).save_pretrained(folder)
    m = models.load("hf:" + folder)
    assert m.task_head == "causal LM" and m.next_token_model is m.task  # what Next token and the bench read
    clean, corrupt = "the film was great so", "the film was awful so"
    p = patch_heads(m, clean, corrupt, "a", "b")
    assert p.metric == "logit difference at the last token" and p.tokens[0] == "[CLS]" and "[SEP]" not in p.tokens
    net = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    a, b = (m.tokenizer(t, return_tensors="pt")["input_ids"][:, :-1] for t in (clean, corrupt))  # [SEP] left off
    ia, iw = m.tokenizer.convert_tokens_to_ids(["a", "b"])
    cfg = net.config
    want = reference(net, a, b, lambda x: x[:, -1], ia, iw, cfg.num_attention_heads,
                     cfg.hidden_size // cfg.num_attention_heads)
    assert abs(p.clean_diff - want[0]) < 1e-5 and abs(p.corrupt_diff - want[1]) < 1e-5
    assert abs((p.scores - want[2]) * (want[0] - want[1])).max() < 1e-6


def test_a_causal_lm_head_on_an_encoder_that_attends_both_ways_is_told_why_it_is_not_patched(tmp_path):
    """BertLMHeadModel saved without is_decoder: each token reads the whole text, so its last logit is no next
    token; patching says so instead of labelling it one."""
    m = models.load("hf:" + save("bert", "causal", tmp_path))
    assert m.task_head == "causal LM" and not m.writes
    with pytest.raises(UserError, match="does not set is_decoder"):
        check(m)
