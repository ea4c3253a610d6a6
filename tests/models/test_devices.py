import numpy as np
import pytest
import torch

from analysis.trace import AttentionTrace
from models.devices import available_devices, dtypes_for, resolve


def test_cpu_always_listed_with_float32_first_and_a_gpu_offers_half_precision():
    assert available_devices()[0] == "cpu"
    assert dtypes_for("cpu")[0] == "float32"  # the half precisions follow the CPU: test_devices_cpu.py
    assert "bfloat16" in dtypes_for("cuda")


def test_absent_device_falls_back_to_cpu_with_a_notice():
    if torch.cuda.is_available():
        pytest.skip("cuda is present here")
    device, dtype, notes = resolve("cuda", "float16")
    assert (device, dtype) == ("cpu", "float32")
    assert "not available" in notes[0]


def test_trace_rejects_mismatched_shapes():
    with pytest.raises(ValueError):
        AttentionTrace(["a", "b"], ["a", "b"], np.ones((1, 1, 2, 3)), "self")
    with pytest.raises(ValueError):
        AttentionTrace(["a"], ["a"], np.ones((1, 1, 1, 1)), "sideways")
