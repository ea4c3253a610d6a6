"""models.capture: the one attention implementation registered with transformers records, per call, weights equal
to eager output_attentions exactly, heads' outputs that rebuild the attention output, and nothing outside its
context; families that bypass the registry are left eager."""
import threading

import pytest
import torch

from bench.tiny_any import build
from models import capture

pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

# (model_type, kind, what it exercises)
ROUTED = [
    ("llama", "causal"), ("mistral", "causal"), ("qwen2", "causal"), ("qwen3", "causal"), ("gemma", "causal"),
    ("gemma2", "causal"), ("phi3", "causal"), ("opt", "causal"), ("gpt2", "causal"), ("gpt_neox", "causal"),
    ("bert", "masked"), ("xlm-roberta", "masked"), ("roberta", "masked"), ("distilbert", "masked"),
    ("mbart", "seq2seq"), ("pegasus", "seq2seq"), ("bart", "seq2seq"), ("t5", "seq2seq"),
    ("gemma2", "classifier"),
    # more of the auto mappings, one each: what routes through the registry is recorded exactly there too
    *[(t, "causal") for t in ("cohere", "cohere2", "starcoder2", "stablelm", "persimmon", "phi", "olmo2", "granite",
                              "glm4", "helium", "smollm3", "gpt_bigcode", "nemotron", "biogpt", "qwen2_moe")],
    *[(t, "masked") for t in ("albert", "electra", "modernbert", "ernie", "roberta-prelayernorm")],
    *[(t, "seq2seq") for t in ("m2m_100", "blenderbot", "plbart", "mt5", "umt5", "marian")],
]
BYPASS = [("falcon", "causal"), ("gptj", "causal"), ("bloom", "causal"), ("deberta-v2", "masked")]
IDS = torch.tensor([[1, 10, 20, 30, 40, 50, 60, 2]])  # (1, T)


def run(model, kind: str, ids=IDS):
    extra = {"decoder_input_ids": ids[:, :5]} if kind == "seq2seq" else {}
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True, **extra)
    if kind == "seq2seq":  # the order the layers run in: encoder, then each decoder layer's self and cross
        return [*out.encoder_attentions, *[a for pair in zip(out.decoder_attentions, out.cross_attentions)
                                           for a in pair]]
    return list(out.attentions)


@pytest.mark.parametrize(("model_type", "kind"), ROUTED)
def test_recorded_weights_equal_eager_output_attentions(model_type, kind):
    model = build(model_type, kind)
    expected = run(model, kind)
    assert capture.install(model) and capture.installed(model)
    with capture.recording(model) as calls:
        again = run(model, kind)
    assert [tuple(c.weights.shape) for c in calls] == [tuple(e.shape) for e in expected]
    assert max(float((c.weights - e).abs().max()) for c, e in zip(calls, expected)) == 0.0
    assert max(float((a - e).abs().max()) for a, e in zip(again, expected)) == 0.0  # the model computes as before
    for c in calls:  # each head's output is its weights times its (shared, for grouped queries) values
        v = c.value.repeat_interleave(c.weights.shape[1] // c.value.shape[1], dim=1)  # (B, H, Tk, d_v)
        assert torch.allclose(c.output, c.weights @ v, atol=1e-6)
        assert c.query.shape[-1] == c.key.shape[-1]
    if kind == "seq2seq":
        assert [c.cross for c in calls] == [False, False, False, True, False, True]


def test_gemma2_softcap_and_sliding_window_are_the_familys_own():
    model = build("gemma2", "causal", attn_logit_softcapping=5.0, sliding_window=3)
    expected = run(model, "causal")
    capture.install(model)
    with capture.recording(model) as calls:
        run(model, "causal")
    assert all(torch.equal(c.weights, e) for c, e in zip(calls, expected))
    assert float(calls[0].weights[0, 0, -1, :4].abs().max()) == 0.0  # layer 0 slides: old keys get nothing


@pytest.mark.parametrize(("model_type", "kind"), BYPASS)
def test_families_that_bypass_the_registry_stay_eager(model_type, kind):
    model = build(model_type, kind)
    assert not capture.install(model) and model.config._attn_implementation == "eager"
    with capture.recording(model) as calls:
        assert len(run(model, kind)) == 2
    assert calls == []


def test_nothing_is_recorded_outside_a_recording_and_nesting_is_refused():
    model = build("llama", "causal")
    capture.install(model)
    with capture.recording(model) as calls:
        with pytest.raises(RuntimeError, match="already open"):
            with capture.recording(model):
                pass
    run(model, "causal")
    assert calls == []


def test_concurrent_recordings_on_one_model_keep_their_own_calls():
    model = build("qwen3", "causal")
    inputs = [torch.tensor([[1, *range(5 + i, 5 + i + 3 + i), 2]]) for i in range(4)]  # (1, T_i), lengths differ
    expected = [run(model, "causal", ids) for ids in inputs]
    capture.install(model)
    got: dict[int, list] = {}
    start = threading.Barrier(len(inputs))

    def work(i: int) -> None:
        start.wait()
        for _ in range(3):
            with capture.recording(model) as calls:
                run(model, "causal", inputs[i])
            got.setdefault(i, []).append([c.weights for c in calls])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, runs in got.items():
        assert len(runs) == 3
        for weights in runs:
            assert all(torch.equal(w, e) for w, e in zip(weights, expected[i], strict=True))
