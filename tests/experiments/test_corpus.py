"""experiments.corpus on the packaged MiniLM and tiny BERTs built here: batched equals one sentence at a time,
shards merge to one pass, the cache follows corpus and model, runs stop and resume, bad models get a sentence."""
import math

import numpy as np
import pytest
import torch
from scipy.stats import entropy
from transformers import BertConfig, BertModel

import models
from analysis import corpus_stats as cs
from analysis import patterns
from experiments import corpus as ec
from models.hf import Encoder

SENTENCES = ["The river bank was dirty after the flood.", "Hi.", "A cat, a dog and a bird sat on the wall.",
             "The bank opens at nine and the bank closes at four.", "Nobody wanted the broken bicycle wheel.",
             "Why?", "Return the number of items in a container."]


@pytest.fixture(scope="module")
def bert():
    return models.load("bert")


def tiny_bert(bert, seed: int) -> Encoder:
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=bert.tokenizer.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64, attn_implementation="eager")
    return Encoder(model=BertModel(cfg).eval(), tokenizer=bert.tokenizer, label="tiny BERT", device="cpu",
                   dtype="float32")


def test_batched_statistics_equal_a_direct_computation_one_sentence_at_a_time(bert, tmp_path):
    stats = ec.run(bert, SENTENCES, folder=tmp_path).stats
    traces = [bert.attend(s) for s in SENTENCES]                       # no padding, the model's own path
    assert stats.tokens == [t.tokens for t in traces]
    a = [t.weights[3, 7].astype(np.float64) for t in traces]           # layer 3, head 7, written out by hand
    prev = np.mean([np.mean([w[i, i - 1] for i in range(1, len(w))]) for w in a])
    cls = np.mean([w[:, 0].mean() for w in a])
    ent = np.mean([np.mean([entropy(r) for r in w]) / math.log(len(w)) for w in a])
    dist = np.mean([np.mean([sum(w[i, j] * abs(i - j) for j in range(len(w))) for i in range(len(w))]) for w in a])
    got = cs.means(stats)[3, 7]
    assert got[[0, 2, 5, 8]] == pytest.approx([prev, cls, ent, dist], abs=2e-5)
    np.testing.assert_allclose(stats.per_sentence, np.stack([patterns.sentence_stats(t.weights, t.tokens)
                                                             for t in traces]), atol=2e-5)
    assert cs.means(stats)[0, 2, 0] > 0.9  # L0 H2 is MiniLM's previous-token head
    assert stats.js_rows == len(traces[0].tokens)  # JS from sentence 0 only (every JS_EVERY-th)


def test_shards_merged_equal_one_pass(bert, tmp_path):
    one = ec.run(bert, SENTENCES, folder=tmp_path / "one", shard_size=100)
    sharded = ec.run(bert, SENTENCES, folder=tmp_path / "three", shard_size=3)
    assert (one.computed, sharded.computed) == (1, 3)
    for name in ("index", "count", "total", "total_sq", "js_total", "per_sentence"):
        # float32 sums in other batch shapes: a few ulps apart (total_sq reaches 80, where one ulp is 7.6e-6)
        np.testing.assert_allclose(getattr(sharded.stats, name), getattr(one.stats, name), rtol=1e-6, atol=1e-5,
                                   err_msg=name)
    assert sharded.stats.tokens == one.stats.tokens and sharded.stats.js_rows == one.stats.js_rows


def test_cache_follows_the_corpus_and_the_model(bert, tmp_path):
    a, b = tiny_bert(bert, 0), tiny_bert(bert, 0)
    assert ec.identity(a) == ec.identity(b)
    first = ec.run(a, SENTENCES, folder=tmp_path, shard_size=4)
    again = ec.run(b, SENTENCES, folder=tmp_path, shard_size=4)
    assert (first.computed, again.computed, again.loaded) == (2, 0, 2)
    np.testing.assert_array_equal(again.stats.total, first.stats.total)
    assert ec.cached(b, SENTENCES, tmp_path) is None  # another shard size: cached() reads SHARD-sized shards
    changed = SENTENCES[:5] + ["A different sentence here.", SENTENCES[6]]
    edit = ec.run(a, changed, folder=tmp_path, shard_size=4)
    assert (edit.computed, edit.loaded) == (1, 1) and edit.stats.tokens[5][1] == "a"
    fresh = ec.run(a, changed, folder=tmp_path / "fresh", shard_size=4)
    np.testing.assert_allclose(edit.stats.total, fresh.stats.total)
    with torch.no_grad():
        b.model.encoder.layer[1].attention.self.key.weight[0, 0] += 1e-3
    assert ec.identity(b) != ec.identity(a)
    assert ec.run(b, SENTENCES, folder=tmp_path, shard_size=4).computed == 2
    assert ec.identity(tiny_bert(bert, 1)) != ec.identity(a)


def test_a_stopped_run_keeps_its_shards_and_resumes(bert, tmp_path):
    model, seen = tiny_bert(bert, 0), []
    part = ec.run(model, SENTENCES, folder=tmp_path, shard_size=2, progress=lambda d, t: seen.append((d, t)),
                  cancel=lambda: len(seen) >= 2)
    assert part.stopped and part.done == 4 and len(part.stats.tokens) == 4 and seen == [(2, 7), (4, 7)]
    assert ec.cached(model, SENTENCES, tmp_path) is None
    rest = ec.run(model, SENTENCES, folder=tmp_path, shard_size=2)
    assert (rest.loaded, rest.computed, rest.done, rest.stopped) == (2, 2, 7, False)


def test_cache_is_trimmed_to_its_byte_bound_oldest_first(bert, tmp_path):
    model = tiny_bert(bert, 0)
    ec.run(model, SENTENCES, folder=tmp_path, shard_size=1)
    sizes = sorted(p.stat().st_size for p in tmp_path.glob("*.npz"))
    assert len(sizes) == 7
    bound = sum(sizes) - sizes[0] - 1  # one file too many
    ec.run(model, SENTENCES[::-1], folder=tmp_path, shard_size=1, max_bytes=bound)
    assert sum(p.stat().st_size for p in tmp_path.glob("*.npz")) <= bound


def test_cached_reads_only_what_is_there(bert, tmp_path, monkeypatch):
    monkeypatch.setenv(ec.CACHE_ENV, str(tmp_path))
    model = tiny_bert(bert, 0)
    assert ec.cached(model, SENTENCES) is None
    ec.run(model, SENTENCES)
    scores = ec.head_scores(ec.cached(model, SENTENCES))
    assert set(scores) == set(patterns.FEATURES) | {"consistency"} and scores["previous token"].shape == (2, 2)


def test_models_without_batching_and_models_that_cannot_read_english(tmp_path):
    toy = models.load("toy")
    stats = ec.run(toy, SENTENCES[:3], folder=tmp_path).stats
    assert stats.per_sentence.shape[:3] == (3, 1, 2)
    with pytest.raises(ValueError, match="only sorts digits"):
        ec.run(models.load("tiny"), SENTENCES[:2], folder=tmp_path)
    with pytest.raises(ValueError, match="self-attention"):
        ec.run(models.load("seq2seq-luong"), SENTENCES[:2], folder=tmp_path)
    with pytest.raises(ValueError, match="empty"):
        ec.run(toy, [], folder=tmp_path)


def test_long_sentences_are_cut_and_counted(bert, tmp_path):
    stats = ec.run(bert, ["word " * 300, "Short."], folder=tmp_path).stats
    assert stats.truncated == 1 and len(stats.tokens[0]) == ec.MAX_TOKENS and stats.tokens[0][-1] == "[SEP]"


def test_query_key_points_give_the_models_attention(bert):
    pts = ec.qk_points(bert, SENTENCES, layer=2, max_tokens=30)
    rows = sorted(set(pts["row"].tolist()))
    assert rows == [0, 1, 2] and len(pts["tokens"]) <= 30                 # whole sentences up to the budget
    trace = bert.attend(SENTENCES[2])
    sel = pts["row"] == 2
    q, k = pts["q"][sel][:, 5], pts["k"][sel][:, 5]                       # head 5: (T, hs)
    mine = torch.from_numpy(q @ k.T / math.sqrt(q.shape[-1])).softmax(-1).numpy()
    np.testing.assert_allclose(mine, trace.weights[2, 5], atol=1e-5)
    assert [t for t, r in zip(pts["tokens"], pts["row"]) if r == 2] == trace.tokens
    with pytest.raises(ValueError, match="Layer 9"):
        ec.qk_points(bert, SENTENCES, layer=9, max_tokens=30)
