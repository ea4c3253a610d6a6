import numpy as np
import pytest
import torch

from analysis.trace import AttentionTrace
from models.devices import available_devices, dtypes_for, resolve


def test_cpu_always_listed_and_half_precision_only_on_gpu():
    assert available_devices()[0] == "cpu"
    assert dtypes_for("cpu") == ["float32"]
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
