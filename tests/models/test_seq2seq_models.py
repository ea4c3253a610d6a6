import random

import numpy as np
import pytest
import torch

import models
from data import dates, reverse
from models import seq2seq
from models.seq2seq import EOS, SOS, Config, Seq2Seq, pad_batch


def tiny(attention: str, task: str = "dates") -> Seq2Seq:
    torch.manual_seed(0)
    return Seq2Seq(Config(task, attention, emb=8, hidden=6, attn=5)).eval()


def batch(net: Seq2Seq, texts: list[str], targets: list[str]):
    src, lengths = pad_batch([net.src_vocab.encode(t) for t in texts])
    tgt_in, _ = pad_batch([[SOS] + net.tgt_vocab.encode(t) for t in targets])
    return src, lengths, tgt_in


TEXTS, TARGETS = ["3 march 2021", "the 21st of sept 1999"], ["2021-03-03", "1999-09-21"]


@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
def test_rows_sum_to_one_and_padding_gets_nothing(attention):
    net = tiny(attention)
    src, lengths, tgt_in = batch(net, TEXTS, TARGETS)
    with torch.no_grad():
        _, alpha = net(src, lengths, tgt_in)                              # (B, T_out, T_in)
    assert torch.allclose(alpha.sum(-1), torch.ones(alpha.shape[:2]), atol=1e-6)
    assert (alpha[0, :, len(TEXTS[0]):] == 0).all()


def test_bahdanau_scores_follow_the_papers_formula():
    net = tiny("bahdanau")
    src, lengths, tgt_in = batch(net, TEXTS, TARGETS)
    with torch.no_grad():
        _, alpha = net(src, lengths, tgt_in)
        mem = net.encode(src, lengths)
    W_s, W_h, b_h, v = (p.detach().numpy() for p in (net.W_s.weight, net.W_h.weight, net.W_h.bias, net.v.weight))
    for b, text in enumerate(TEXTS):
        s0, h = mem["s0"][b].numpy(), mem["h"][b, : len(text)].numpy()
        # e_0i = v^T tanh(W_s s_{-1} + W_h h_i)
        e = np.array([v @ np.tanh(W_s @ s0 + W_h @ h_i + b_h) for h_i in h]).ravel()
        expected = np.exp(e - e.max()) / np.exp(e - e.max()).sum()
        np.testing.assert_allclose(alpha[b, 0, : len(text)].numpy(), expected, atol=1e-6)


def test_luong_scores_use_the_current_state():
    net = tiny("luong")
    src, lengths, tgt_in = batch(net, TEXTS, TARGETS)
    with torch.no_grad():
        _, alpha = net(src, lengths, tgt_in)
        mem = net.encode(src, lengths)
        s = mem["s0"]
        for t in range(tgt_in.shape[1]):                                  # the decoder GRU one step at a time
            _, s = net.decoder(net.tgt_emb(tgt_in[:, t]).unsqueeze(1), s.unsqueeze(0))
            s = s.squeeze(0)
            for b, text in enumerate(TEXTS):
                h = mem["h"][b, : len(text)]
                e = h @ net.W.weight.T @ s[b]                             # s_t^T W h_i
                torch.testing.assert_close(alpha[b, t, : len(text)], torch.softmax(e, 0), atol=1e-6, rtol=0)


@pytest.mark.parametrize("attention", ["bahdanau", "luong", "none"])
def test_teacher_forcing_equals_step_by_step(attention):
    net = tiny(attention)
    src, lengths, tgt_in = batch(net, TEXTS, TARGETS)
    with torch.no_grad():
        logits, _ = net(src, lengths, tgt_in)
        mem = net.encode(src, lengths)
        s = mem["s0"]
        for t in range(tgt_in.shape[1]):
            logp, s, _ = net.step(tgt_in[:, t], s, mem)
            torch.testing.assert_close(logp, torch.log_softmax(logits[:, t], -1), atol=1e-5, rtol=0)


@pytest.mark.parametrize("attention", ["bahdanau", "luong", "none"])
def test_beam_width_one_is_greedy_untrained(attention):
    net = tiny(attention)
    for text in ["1 jan 1900", "december 31st, 2099", "zz"]:
        src, lengths = pad_batch([net.src_vocab.encode(text)])
        g_ids, g_alpha = net.greedy(src, lengths, 12)
        b_ids, b_alpha = net.beam(src, lengths, 12, width=1)
        g = g_ids[0].tolist()
        assert b_ids.tolist() == g[: g.index(EOS) + 1 if EOS in g else len(g)]
        if attention != "none":
            torch.testing.assert_close(b_alpha, g_alpha[0, : len(b_ids)])


@pytest.fixture(scope="module")
def shipped():
    torch.set_num_threads(1)
    return {name: seq2seq.load(name) for name in seq2seq.MODELS}


def test_registry_loads_both_date_models():
    for name in ("seq2seq-bahdanau", "seq2seq-luong"):
        assert name in models.available()
        assert isinstance(models.load(name), seq2seq.Seq2SeqModel)


@pytest.mark.parametrize("name", ["seq2seq-bahdanau", "seq2seq-luong"])
def test_attend_contract(shipped, name):
    text = "Wednesday, the 3rd of March 2021"
    tr = shipped[name].attend(text)
    assert tr.kind == "cross" and tr.output == "2021-03-03"
    assert tr.tokens == list("2021-03-03") and tr.key_tokens == list(text)
    assert tr.weights.shape == (1, 1, 10, len(text)) and tr.weights.dtype == np.float32
    np.testing.assert_allclose(tr.weights.sum(-1), 1, atol=1e-5)
    assert tr.notices == ()
    assert shipped[name].label and shipped[name].device == "cpu"


@pytest.mark.parametrize("name", ["seq2seq-bahdanau", "seq2seq-luong", "seq2seq-none"])
def test_held_out_exact_match_at_least_98_percent(shipped, name):
    held_out = dates.dataset(200, seed=7, split="test")
    right = sum("".join(shipped[name].decode(text).output) == iso for text, iso in held_out)
    assert right / len(held_out) >= 0.98


@pytest.mark.parametrize("name", ["seq2seq-bahdanau", "seq2seq-luong", "reverse-attention"])
def test_beam_width_one_is_greedy_shipped(shipped, name):
    texts = ["march 3, 2021", "31 DEC 1999", "hello"] if name.startswith("seq2seq") else [
        "abcdefgh", "qwertyuiopasdfghjklzxcvbnmqwertyuiop"]
    net = shipped[name].net
    for text in texts:
        greedy = shipped[name].decode(text, beam=1)                      # batched greedy path
        src, lengths = pad_batch([net.src_vocab.encode(text.lower())])
        ids, alpha = net.beam(src, lengths, seq2seq.TASKS[net.cfg.task]["max_out"], width=1)
        assert net.tgt_vocab.decode(ids.tolist()) == greedy.output
        np.testing.assert_allclose(alpha[: len(greedy.output)].numpy(), greedy.weights, atol=1e-6)


def test_wider_beam_still_decodes_a_date(shipped):
    d = shipped["seq2seq-luong"].decode("the 1st of sept. 1999", beam=4)
    assert "".join(d.output) == "1999-09-01" and d.weights.shape == (10, len("the 1st of sept. 1999"))


def test_beam_hypotheses_score_what_teacher_forcing_scores(shipped):
    """Each hypothesis of models.beam.search on a GRU: its score is the summed log-probability the network
    gives its tokens when they are fed back (forward, teacher forcing), and its rows are that pass's alpha."""
    model = shipped["seq2seq-bahdanau"]
    net, text = model.net, "the 1st of sept. 1999"
    hyps = model.hypotheses(text, 3)
    assert "".join(hyps[0].output) == "".join(model.decode(text, beam=3).output) == "1999-09-01"
    src, lengths = pad_batch([net.src_vocab.encode(text.lower())])
    for h in hyps:
        ids = net.tgt_vocab.encode(h.output) + ([EOS] if h.finished else [])
        with torch.no_grad():
            logits, alpha = net(src, lengths, torch.tensor([[SOS] + ids[:-1]]))
        logp = logits[0].float().log_softmax(-1)  # (T, V)
        assert abs(float(logp[torch.arange(len(ids)), ids].sum()) - h.score) < 1e-4
        np.testing.assert_allclose(alpha[0, : len(h.output)].numpy(), h.weights, atol=1e-5)
    assert [h.score for h in hyps if h.finished] == sorted((h.score for h in hyps if h.finished), reverse=True)


def test_non_date_still_decodes_with_a_note(shipped):
    tr = shipped["seq2seq-bahdanau"].attend("the river bank was dirty")
    assert tr.output and tr.weights.shape[2] == len(tr.output)
    assert any("only knows dates" in n for n in tr.notices)


@pytest.mark.parametrize("text, phrase", [("x" * 41, "at most 40"), ("", "Type a date"),
                                          ("march 3rd, 2021!", "remove '!'"),
                                          ("3/3/2021", "month as a word")])
def test_unusable_input_raises_one_clear_sentence(shipped, text, phrase):
    with pytest.raises(ValueError, match=phrase):
        shipped["seq2seq-luong"].attend(text)


def test_reversal_input_rules(shipped):
    with pytest.raises(ValueError, match="at most 60"):
        shipped["reverse-attention"].decode("a" * 61)
    with pytest.raises(ValueError, match="a-z"):
        shipped["reverse-none"].decode("ab cd")
    with pytest.raises(ValueError, match="no attention"):
        shipped["reverse-none"].attend("abcdef")


def test_the_fixed_context_collapses_on_long_strings_while_attention_holds(shipped):
    rng = random.Random(9)
    pairs = [(s, s[::-1]) for s in (reverse.random_string(rng, rng.randint(45, 60)) for _ in range(20))]
    scores = {name: reverse.accuracy(["".join(shipped[name].decode(s).output) for s, _ in pairs],
                                     [t for _, t in pairs]) for name in ("reverse-attention", "reverse-none")}
    assert scores["reverse-attention"][1] >= 0.8
    assert scores["reverse-none"][1] <= 0.3
    assert scores["reverse-attention"][0] > scores["reverse-none"][0]


def test_unknown_name_says_what_exists():
    with pytest.raises(ValueError, match="seq2seq-bahdanau"):
        seq2seq.load("seq2seq-transformer")
