"""torchao is imported when the precision view quantizes, not with every model: the server's warm-up and a model's
load leave it out, the function transformers' torchao quantizer takes from it (for a torchao-quantized checkpoint) is
the library's own once called, and transformers still sees torchao wherever it asks (a TorchAoConfig builds)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
import torch
from ui.runtime import warm
import models

warm._warm()  # the server's start: heavy imports and the default model
models.load("gpt")
print("after load:", "torchao" in sys.modules)

import transformers.quantizers.quantizer_torchao as quantizer
tensors = {"w": torch.arange(6.0).reshape(2, 3)}
ours = quantizer.flatten_tensor_state_dict(tensors)
print("after the quantizer's call:", "torchao" in sys.modules)
from torchao.prototype.safetensors.safetensors_support import flatten_tensor_state_dict
theirs = flatten_tensor_state_dict(tensors)
assert quantizer.is_torchao_available(), "the quantizer still sees torchao"
assert ours[1] == theirs[1] and ours[0].keys() == theirs[0].keys(), (ours, theirs)
assert all(torch.equal(ours[0][k], theirs[0][k]) for k in ours[0])
for name, module in list(sys.modules.items()):  # transformers' own check wherever it was imported (its configs)
    check = vars(module).get("is_torchao_available") if name.startswith("transformers") else None
    assert check is None or check(), name
from torchao.quantization import Int8WeightOnlyConfig
from transformers import TorchAoConfig
TorchAoConfig(Int8WeightOnlyConfig())  # a torchao-quantized checkpoint's config: refused if torchao seemed missing
print("same")
"""


@pytest.mark.slow  # a fresh Python that imports the app's warm-up and transformers: ~10 s on 2 cores
def test_torchao_waits_for_its_first_use():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    said = out.stdout.split("\n")[-4:-1]
    assert said == ["after load: False", "after the quantizer's call: True", "same"], out.stdout
