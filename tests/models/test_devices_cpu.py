"""models.devices on the CPU: each dtype its instructions compute natively is offered, the rest refused with the
reason; a pure decision on what torch reports, checked with both answers (this machine's CPU is only one)."""
import torch

from models import devices

AVX2 = frozenset({"avx2"})
SAPPHIRE = frozenset({"avx2", "avx512", "avx512_bf16", "amx_tile", "vnni"})


def test_bf16_offered_with_avx512_bf16_or_amx_and_refused_without_saying_why():
    assert devices.dtypes_for("cpu", SAPPHIRE) == ["float32", "bfloat16"]
    assert devices.dtypes_for("cpu", frozenset({"avx512", "avx512_bf16"})) == ["float32", "bfloat16"]
    assert devices.dtypes_for("cpu", frozenset({"amx_tile"})) == ["float32", "bfloat16"]
    assert devices.dtypes_for("cpu", AVX2) == ["float32"]
    why = devices.cpu_refusal("bfloat16", AVX2)
    assert why.startswith("bfloat16 is not offered on this CPU") and "AVX512-BF16 or AMX" in why and "AVX2" in why
    assert devices.cpu_refusal("bfloat16", SAPPHIRE) is None
    assert "AMX-FP16" in devices.cpu_refusal("float16", SAPPHIRE)
    assert devices.dtypes_for("cpu", SAPPHIRE | {"amx_fp16"}) == ["float32", "float16", "bfloat16"]
    assert devices.cpu_refusal("float32", frozenset()) is None
    assert "none of AVX2" in devices.cpu_refusal("bfloat16", frozenset())


def test_this_cpu_is_judged_by_what_torch_reports():
    found = devices.cpu_features()
    assert found == frozenset(n for n in devices.CPU_FEATURES if getattr(torch.cpu, f"_is_{n}_supported")())
    bf16 = bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    assert ("bfloat16" in devices.dtypes_for("cpu")) == bf16
    device, dtype, notes = devices.resolve("cpu", "bfloat16")
    if bf16:
        assert (dtype, notes) == ("bfloat16", ())
    else:  # this machine (AVX2 only): refused, with the reason
        assert dtype == "float32" and notes == (devices.cpu_refusal("bfloat16", found),)


def test_a_gpu_offers_every_dtype():
    assert devices.dtypes_for("cuda", AVX2) == list(devices.DTYPE_NAMES)


def test_the_precision_page_says_why_a_model_has_no_task_to_check():
    from types import SimpleNamespace

    from experiments.precision import no_task

    vit = SimpleNamespace(family="vision", predicts="image class", config=SimpleNamespace(num_labels=3))
    assert "image classifier's 3 classes are not the ten held-out digits" in no_task(vit)
    assert "no language-model head" in no_task(SimpleNamespace(family="decoder", predicts=None))
    seq2seq = SimpleNamespace(family="encoder-decoder", predicts="target token")
    assert no_task(seq2seq).startswith("No task metric for this model here")


def test_synchronize_waits_only_on_a_cuda_device():
    """The one wait the timers use (models.devices.synchronize) leaves a cpu alone: on a torch without CUDA a call to
    torch.cuda.synchronize raises, so a wait that did not look at the device would fail here."""
    assert devices.synchronize("cpu", after=torch.ones(2) * 2) is None
    assert devices.synchronize(torch.device("cpu")) is None
    if not torch.cuda.is_available():
        try:
            torch.cuda.synchronize("cuda")
        except (AssertionError, RuntimeError):
            pass
        else:
            raise AssertionError("torch.cuda.synchronize ran on a machine without CUDA: this test proves nothing here")
