"""experiments.kv_cache.generate_modes: the cached and uncached generations are interleaved round by round, and each
record keeps its fastest generation, so a load on the machine cannot flip the comparison one way."""
import torch

from experiments import kv_cache
from models.decoder import DecoderConfig, build, prompt


def test_rounds_interleave_the_modes_and_each_record_keeps_its_fastest_run(monkeypatch):
    net = build(DecoderConfig(1, 32, 2, 2), "cpu", 64, 1 << 30)
    seen = []  # (use_cache, total seconds) of every generation, in order

    def watched(net, idx, max_new, use_cache, *args):
        steps = list(kv_stream(net, idx, max_new, use_cache, *args))
        seen.append((use_cache, sum(s.seconds for s in steps)))
        yield from steps

    kv_stream = kv_cache.stream
    monkeypatch.setattr(kv_cache, "stream", watched)
    fractions = []
    records = kv_cache.generate_modes(fractions.append, net, prompt(net.cfg), 8,
                                {"cached": kv_cache.Record(), "uncached": kv_cache.Record()}, rounds=3)
    assert [c for c, _ in seen] == [True, False] * 3
    for mode, use_cache in (("cached", True), ("uncached", False)):
        rec = records[mode]
        assert rec.runs == 3 and len(rec.seconds) == 8
        assert sum(rec.seconds) == min(t for c, t in seen if c == use_cache)
    assert fractions[-1] == 1 and len(fractions) == 3 * 2 * 8 and fractions == sorted(fractions)
    assert records["cached"].tokens == records["uncached"].tokens
    picked = [torch.stack(records[m].logits).argmax(-1) for m in ("cached", "uncached")]
    assert torch.equal(*picked)
