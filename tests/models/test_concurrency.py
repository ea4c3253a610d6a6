"""Many sessions share one loaded model: concurrent calls on different inputs each get their own result.

Every model-running function the views call is run from several threads at once, on inputs of different
lengths, interleaved, and each result is compared with the same call made alone. A hook, gate, mask or mode
left on the shared model would hand one caller another's numbers (or a shape error). The process's torch
thread count must be the same after concurrent generations as before.
"""
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
import torch

import models
from analysis.trace import HeadQKV
from experiments import masked_lm, paraphrase, sorting
from experiments.kv_cache import generate
from models import gates
from models.decoder import DecoderConfig, build, prompt
from models.internals import head_qkv

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = ["The river bank was dirty.", "Cats sleep.", "A much longer sentence about the weather in the hills.",
             "Money in the bank.", "Snow fell on the quiet old train station at night."]
ROUNDS = 2  # each input is asked for this many times, interleaved with the others


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (np.ndarray, torch.Tensor)):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and np.allclose(a, b, atol=1e-5)
    if hasattr(a, "weights"):  # AttentionTrace
        return a.tokens == b.tokens and a.output == b.output and _same(a.weights, b.weights)
    if isinstance(a, HeadQKV):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in fields(HeadQKV))
    return a == b


def concurrent_matches_alone(fn, inputs, threads: int = 4) -> None:
    """fn(x) for every x, alone and then ROUNDS times each from `threads` threads at once, interleaved."""
    alone = [fn(x) for x in inputs]
    order = [i for _ in range(ROUNDS) for i in range(len(inputs))]
    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(lambda i: (i, fn(inputs[i])), order))
    wrong = [inputs[i] for i, r in results if not _same(r, alone[i])]
    assert not wrong, f"{len(wrong)} of {len(results)} concurrent results differ from the call alone: {wrong[:3]}"


@pytest.fixture(scope="module")
def bert():
    return models.load("bert")


@pytest.mark.parametrize("name, inputs", [
    ("toy", SENTENCES),
    ("tiny", ["31415", "2718", "90210", "5", "8675309"]),
    ("seq2seq-bahdanau", ["3 march 1999", "december 25 2001", "1 jan 2020", "july 4 1776"]),
    ("seq2seq-luong", ["3 march 1999", "december 25 2001", "1 jan 2020", "july 4 1776"]),
])
def test_attend_of_each_registry_model(name, inputs):
    model = models.load(name)
    concurrent_matches_alone(model.attend, inputs)


def test_attend_of_bert_with_sentence_pairs(bert):
    pairs = [(s, SENTENCES[-1 - i]) for i, s in enumerate(SENTENCES)]
    concurrent_matches_alone(lambda p: bert.attend(*p), pairs)


def test_inside_a_head_of_bert(bert):
    args = [(s, i % 6, (3 * i) % 12) for i, s in enumerate(SENTENCES)]
    concurrent_matches_alone(lambda a: head_qkv(bert.model, bert.tokenizer, *a), args)


def test_inside_a_head_of_toy_and_tiny():
    toy, tiny = models.load("toy"), models.load("tiny")
    concurrent_matches_alone(lambda s: toy.head_qkv(s, 0, 1), SENTENCES)
    concurrent_matches_alone(lambda d: tiny.head_qkv(d, 1, 0), ["31415", "2718", "90210", "8675309"])


def test_gated_attention_with_different_heads_off(bert):
    counts = gates.head_counts(bert.model)
    plans = [{}, {0: [1, 2]}, {3: list(range(12))}, {5: [0], 1: [4, 5, 6]}]

    def gated_attend(i):
        with gates.gated(bert.model, gates.mask(counts, plans[i])):
            return bert.attend(SENTENCES[i])

    concurrent_matches_alone(gated_attend, range(len(plans)))


@pytest.mark.slow
def test_gated_metrics_paraphrase_and_sorting(bert):
    tiny = models.load("tiny")
    retrieval = paraphrase.held_out_metric(bert.model, bert.tokenizer, 10)
    exact = sorting.held_out_metric(tiny.net, 40)
    plans = [{}, {"0": [0, 1, 2, 3]}, {"2": list(range(12)), "4": [1]}]
    concurrent_matches_alone(retrieval, plans, threads=3)
    tiny_plans = [{}, {"0": [0]}, {"1": [0, 1]}]
    concurrent_matches_alone(exact, tiny_plans, threads=3)


def test_masked_lm_metric(tmp_path):
    from tests.models.test_hf_mlm_pruned import save_tiny_mlm

    save_tiny_mlm(tmp_path)
    enc = models.load(f"hf:{tmp_path}")
    texts = ["The river bank was dirty and the water was cold.", "Cats sleep all day long in the sun.",
             "Snow fell on the quiet old train station at night."]
    concurrent_matches_alone(lambda t: masked_lm.text_metric(enc, t)({}), texts, threads=3)


def test_kv_stream_and_thread_count_unchanged():
    threads_before = torch.get_num_threads()
    net = build(DecoderConfig(layers=2, d_model=64, heads=4, kv_heads=2), total_len=48)
    prompts = [prompt(net.cfg, length=n) for n in (4, 9, 16)]
    concurrent_matches_alone(lambda p: generate(net, p, 8, use_cache=True).tokens, prompts, threads=3)
    concurrent_matches_alone(lambda p: generate(net, p, 4, use_cache=False).tokens, prompts, threads=3)
    assert torch.get_num_threads() == threads_before


def test_no_app_code_sets_the_thread_count():
    # a process-wide setting: one request changing it changes every session's (training scripts, bench and tests
    # may; so may a line marked "# own process": a command line or a child process of its own, never the app's)
    offenders = [f"{p.relative_to(ROOT)}: {line.strip()}" for p in ROOT.glob("*/**/*.py")
                 if p.parts[len(ROOT.parts)] not in ("tests", "bench", "train", ".venv")
                 for line in p.read_text().splitlines()
                 if re.search(r"set_num_threads\s*\(", line) and "# own process" not in line]
    assert offenders == []
