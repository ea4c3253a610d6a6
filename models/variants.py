"""Lower-precision copies of any loaded model, and the bytes their tensors really take.

Variants: fp32, fp16, bf16 (the whole model cast), int8 dynamic PTQ of the linear layers (one weight
scale per output channel, activations per token; or one scale per tensor), int4 weight-only (groups of
32, bf16 activations) and int8 QAT (weights fine-tuned with fake quantization, models/qat.py, then the
same int8 dynamic PTQ). Quantization is torchao's `quantize_`, except int8_ao: torch's own
`torch.ao.quantization.quantize_dynamic` (weights per channel, activations one scale per tensor and call),
whose fbgemm/oneDNN kernels are the fastest int8 on a CPU and less faithful (torch deprecates that
module in favour of torchao). Nothing here writes an integer kernel.

A variant is a copy: the wrapper (models.hf.Encoder, models.tiny.Tiny, any object holding torch modules)
is copied shallowly and every module it holds is deep-copied with one memo, so a module held twice
(an Encoder's `mlm` and its base `model`) stays one module. The original, which the app caches and
shares, is never cast or quantized. make() never raises for a device or model that cannot run a
variant: it returns the fp32 copy with a notice that says why.

    v = make(model, "int8_dynamic")      # v.variant == "int8_dynamic"; v.notices
    linear_bytes(v), model_bytes(v)      # from the tensors' storage, quantized subclasses included
"""
from __future__ import annotations

import copy
import io
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn

from limits.errors import UserError

WEIGHTS = Path(__file__).parent / "weights"
INT4_GROUP = 32


@dataclass(frozen=True)
class Variant:
    key: str
    title: str      # "int8 dynamic (per channel)"
    dtype: str      # what the parts left unquantized are stored in
    about: str      # one line for the page


VARIANTS = {v.key: v for v in (
    Variant("fp32", "fp32", "float32", "the weights as trained: 4 bytes a number."),
    Variant("fp16", "fp16", "float16", "every tensor cast to half precision (model.half()): 5 exponent bits, "
            "10 mantissa bits."),
    Variant("bf16", "bf16", "bfloat16", "every tensor cast to bfloat16: fp32's 8 exponent bits, 7 mantissa bits."),
    Variant("int8_dynamic", "int8 dynamic (per channel)", "float32",
            "linear weights int8 with one scale per output channel; each token's activations get their own "
            "scale and zero point at run time; softmax, layer norm and embeddings stay fp32."),
    Variant("int8_ao", "int8 torch.ao (fastest)", "float32",
            "torch.ao.quantization.quantize_dynamic: linear weights int8 per output channel, packed for torch's "
            "fbgemm/oneDNN kernels; activations one scale per tensor at run time (so less faithful than per "
            "token). The fastest int8 on a CPU; torch deprecates this module in favour of torchao; CPU only."),
    Variant("int8_per_tensor", "int8 dynamic (per tensor)", "float32",
            "linear weights int8 with one scale per matrix; activations one scale and zero point per tensor."),
    Variant("int4_weight_only", "int4 weight-only", "bfloat16",
            f"linear weights int4 in groups of {INT4_GROUP}, a scale and zero point each; activations and "
            "everything else bf16 (torchao's CPU int4 kernel takes bf16)."),
    Variant("int8_qat", "int8 QAT", "float32",
            "weights fine-tuned with int8 fake quantization in the loop (QAT), then the same int8 dynamic PTQ."),
)}


def qat_file(name: str) -> Path:
    """Where the QAT weights of registry model `name` ship: models/weights/<name>_qat.safetensors."""
    return WEIGHTS / f"{name}_qat.safetensors"


def modules(model) -> dict[str, nn.Module]:
    """The torch modules a wrapper holds, by attribute name; a module is its own only entry."""
    if isinstance(model, nn.Module):
        return {"": model}
    return {k: v for k, v in vars(model).items() if isinstance(v, nn.Module)}


def roots(model) -> list[nn.Module]:
    """The held modules that no other held module contains (an Encoder's mlm, not its base model)."""
    held = list({id(m): m for m in modules(model).values()}.values())
    inside = {id(sub) for m in held for sub in list(m.modules())[1:]}
    return [m for m in held if id(m) not in inside]


# --- bytes -------------------------------------------------------------------------------------------------------

def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes a tensor holds: numel × element size, or, for a tensor subclass (torchao's Int8Tensor,
    Int4OpaqueTensor), the sum over its inner tensors (integer data, scales, zero points)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if is_traceable_wrapper_subclass(t):
        names, _ = t.__tensor_flatten__()
        return sum(tensor_bytes(getattr(t, n)) for n in names)
    if t.is_quantized and t.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
        return t.numel() * t.element_size() + tensor_bytes(t.q_per_channel_scales()) + tensor_bytes(
            t.q_per_channel_zero_points())
    if t.is_quantized:  # one float scale and one integer zero point
        return t.numel() * t.element_size() + 16
    return t.numel() * t.element_size()


def _unique(tensors) -> list[torch.Tensor]:
    """Tensors without repeats (tied weights count once)."""
    seen, out = set(), []
    for t in tensors:
        if t is None or id(t) in seen:
            continue
        seen.add(id(t))
        out.append(t)
    return out


def _unique_modules(ms) -> list[nn.Module]:
    return list({id(m): m for m in ms}.values())


def packed(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """A torch.ao dynamic quantized Linear's (int8 weight, bias), unpacked from its packed parameters (which are
    neither parameters nor buffers); None for any other module."""
    from torch.ao.nn.quantized.modules.linear import LinearPackedParams

    return module._weight_bias() if isinstance(module, LinearPackedParams) else None


def linear_bytes(model) -> int:
    """Bytes of every nn.Linear weight (the part quantization touches), scales and zero points included; a
    torch.ao quantized Linear's packed int8 weight counts as its weight."""
    mods = [m for r in roots(model) for m in r.modules()]
    weights = [m.weight for m in mods if isinstance(m, nn.Linear)]
    return sum(tensor_bytes(t) for t in _unique(weights)) + sum(
        tensor_bytes(w) for w, _ in filter(None, map(packed, _unique_modules(mods))))


def model_bytes(model) -> int:
    """Bytes of every parameter and buffer of the model (and every packed torch.ao weight and bias), each once."""
    mods = _unique_modules(m for r in roots(model) for m in r.modules())
    tensors = [t for r in roots(model) for t in [*r.parameters(), *r.buffers()]]
    tensors += [t for pair in filter(None, map(packed, mods)) for t in pair]
    return sum(tensor_bytes(t) for t in _unique(tensors))


def disk_bytes(model) -> int | None:
    """Size of the model's state dicts written with torch.save (None if a tensor type cannot be saved)."""
    buf = io.BytesIO()
    try:
        torch.save([r.state_dict() for r in roots(model)], buf)
    except Exception as err:  # a tensor subclass without serialisation support: say nothing rather than guess
        _refusal(err, "disk_bytes")
        return None
    return buf.tell()


# what a kernel, a dtype or torchao raises when it refuses a layer or a device: expected, shown as a sentence.
# TypeError, AssertionError and the rest are programming errors: shown the same way, and logged with a traceback.
REFUSALS = (RuntimeError, NotImplementedError, ValueError, ImportError, OSError)
_log = logging.getLogger(__name__)


def _refusal(err: Exception, what: str) -> str:
    """The name a sentence shows for err; an error that is not a refusal is logged with its traceback first.
    RuntimeError('no kernel') -> 'RuntimeError'"""
    if not isinstance(err, REFUSALS):
        _log.error("%s raised %s, which is not a refusal", what, type(err).__name__, exc_info=err)
    return type(err).__name__


# --- what a device can run ---------------------------------------------------------------------------------------

def torchao_api():
    """torchao.quantization: quantize_ and its configs (imported on first use; models/__init__ drops the
    harmless lines its import logs on a CPU build of torch)."""
    import torchao.quantization as tq

    return tq


def _config(key: str, device: str):
    """The torchao config of a quantized variant."""
    tq = torchao_api()
    from torchao.quantization.granularity import PerTensor
    from torchao.quantization.quant_primitives import MappingType

    # activations affine (a zero point: GELU outputs and residual streams are not centred on 0), weights symmetric
    if key in ("int8_dynamic", "int8_qat"):
        return tq.Int8DynamicActivationInt8WeightConfig(act_mapping_type=MappingType.ASYMMETRIC,
                                                        set_inductor_config=False)
    if key == "int8_per_tensor":
        return tq.Int8DynamicActivationInt8WeightConfig(granularity=PerTensor(),
                                                        act_mapping_type=MappingType.ASYMMETRIC,
                                                        set_inductor_config=False)
    if key == "int4_weight_only":
        if device == "cpu":  # torchao's CPU int4 path (packed for torch's _weight_int4pack_mm_for_cpu) is a prototype
            from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig

            return PrototypeInt4WeightOnlyConfig(group_size=INT4_GROUP, set_inductor_config=False)
        return tq.Int4WeightOnlyConfig(group_size=INT4_GROUP, int4_packing_format="tile_packed_to_4d",
                                       set_inductor_config=False)
    raise KeyError(key)


def _linear_filter(key: str):
    if key == "int4_weight_only":  # the kernel packs whole groups of inputs and outputs in tiles of 16
        return lambda m, fqn: isinstance(m, nn.Linear) and m.in_features % INT4_GROUP == 0 and m.out_features % 16 == 0
    return lambda m, fqn: isinstance(m, nn.Linear)


def plain_linears(model) -> int:
    """How many nn.Linear weights of the model are ordinary (not quantized) tensors."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    linears = [m for r in roots(model) for m in r.modules() if isinstance(m, nn.Linear)]
    return sum(not is_traceable_wrapper_subclass(m.weight) for m in _unique_modules(linears))


_RAN: set[tuple[str, str]] = set()  # (variant, device) whose probe ran: kept for the process; a failure never is


def _probe(key: str, device: str) -> str | None:
    """None when the variant really runs on `device` (a small layer made and run there, once per process), else
    why not. A failure is probed again on the next call: memory freed or a transient error may let it run then."""
    if (key, device) in _RAN:
        return None
    v = VARIANTS[key]
    try:
        layer = nn.Sequential(nn.Linear(64, 64)).to(device=device, dtype=getattr(torch, v.dtype))
        if key == "int8_ao":
            ao_quantize(layer)
        elif key not in ("fp32", "fp16", "bf16"):
            torchao_api().quantize_(layer, _config(key, device), filter_fn=_linear_filter(key))
        with torch.no_grad():
            layer(torch.ones(2, 64, device=device, dtype=getattr(torch, v.dtype)))
    except Exception as err:  # a refusal (missing kernel, unsupported dtype) is one sentence; anything else is logged
        return f"{v.title} does not run on {device} here ({_refusal(err, f'probing {key} on {device}')})."
    _RAN.add((key, device))
    return None


def cost_note(key: str, device: str) -> str | None:
    """What a variant costs on this device beyond its numbers (e.g. fp16 on a CPU without fp16 arithmetic)."""
    if device != "cpu":
        return None
    from models.devices import CPU_NEEDS, cpu_features

    flags = cpu_features() or frozenset()
    if key == "fp16" and not flags & CPU_NEEDS["float16"][0]:
        return ("fp16 on this CPU is stored in half precision but computed by converting: it has no fp16 "
                "arithmetic, so it saves memory and runs slower than fp32 (a GPU runs it fast).")
    if key in ("bf16", "int4_weight_only") and not flags & CPU_NEEDS["bfloat16"][0]:
        return (f"{VARIANTS[key].title} on this CPU: no native bfloat16 arithmetic (no AVX512-BF16 or AMX), "
                "so bf16 matrix products are emulated and slower than fp32.")
    if key.startswith("int8") and key != "int8_ao" and not flags & {"vnni", "amx_tile"}:
        return ("int8 on this CPU: it has no int8 dot-product instructions (VNNI or AMX), so torchao's integer "
                "matrix products take a generic path with no integer speed-up: the memory saving is real, a "
                "speed-up from int8 needs such a CPU or a GPU (the timing here is this model's own, on this CPU).")
    return None


def unsupported(key: str, device: str, name: str = "") -> str | None:
    """Why `key` cannot be made for model `name` on `device`, or None when it can."""
    if key not in VARIANTS:
        return f"Unknown precision '{key}': choose one of {', '.join(VARIANTS)}."
    if key == "int8_qat" and not qat_file(name).is_file():
        have = sorted(p.name[:-len('_qat.safetensors')] for p in WEIGHTS.glob("*_qat.safetensors"))
        return (f"int8 QAT weights ship for {', '.join(have) or 'no model'} only (train/<name>_qat.py "
                f"makes them), not for {name or 'this model'}.")
    return _probe(key, device)


# --- making a variant --------------------------------------------------------------------------------------------

def _unchanged(model, key: str) -> list[torch.Tensor]:
    """The tensors of `model` variant `key` leaves exactly as they are, so its copy may hold the same ones: the
    embedding tables of a variant that keeps float32 outside its linear layers (MiniLM's word embeddings are 47 MB
    of its 90). Nothing else: a cast (fp16, bf16) writes into its parameters, QAT loads weights into them, and a
    linear layer is replaced by quantization (GPT-2's tied output layer gets a new weight, never a write into the
    shared one)."""
    if VARIANTS[key].dtype != "float32" or key == "int8_qat":
        return []
    return [p for root in roots(model) for m in root.modules() if isinstance(m, nn.Embedding)
            for p in m.parameters(recurse=False)]


def _copy(model, share: list[torch.Tensor] = ()):
    """A shallow copy of the wrapper holding deep copies of its modules (one memo: shared modules stay shared); the
    tensors in `share` are held by the copy as they are, not copied."""
    memo = {id(t): t for t in share}
    if isinstance(model, nn.Module):
        return copy.deepcopy(model, memo)
    new = copy.copy(model)
    for attr, module in modules(model).items():
        setattr(new, attr, copy.deepcopy(module, memo))
    return new


def load_qat(model, name: str) -> None:
    """Load the shipped QAT weights of `name` into the copy's module named in the file's metadata."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    path = qat_file(name)
    with safe_open(str(path), "pt") as f:
        attr = json.loads(f.metadata().get("record", "{}")).get("module", "")
    target = modules(model)[attr]
    device = next(target.parameters()).device
    target.load_state_dict(load_file(str(path), device=str(device)))


def conv1d_as_linear(root: nn.Module) -> int:
    """Replace each transformers Conv1D (GPT-2's y = x W + b with W [in, out]) by the nn.Linear computing the same
    (weight Wᵀ), so that quantization, which takes nn.Linear, reaches GPT-2's attention and MLP; returns how many.
    Only on a copy: the shared model keeps its layers."""
    from transformers.pytorch_utils import Conv1D

    n = 0
    for parent in list(root.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, Conv1D):
                w = child.weight.detach()                                       # (in, out)
                linear = nn.Linear(w.shape[0], w.shape[1], device=w.device, dtype=w.dtype)
                linear.weight.data.copy_(w.t())                                 # (out, in)
                linear.bias.data.copy_(child.bias.detach())
                setattr(parent, name, linear)
                n += 1
    return n


def ao_quantize(root: nn.Module) -> None:
    """torch.ao dynamic quantization of root's nn.Linear children in place: int8 weights, one scale per output
    channel; activations quantized per tensor on each call. torch deprecates torch.ao.quantization: the view's row
    says so; its warning is left to Python's own filters (a process-wide filter set per call would race between
    sessions)."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    if next(root.parameters()).device.type != "cpu":
        raise NotImplementedError("torch.ao dynamic quantization runs on the CPU only")
    quantize_dynamic(root, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True)


def _apply(model, key: str, name: str, device: str) -> None:
    dtype = getattr(torch, VARIANTS[key].dtype)
    if key == "int8_qat":
        load_qat(model, name)
    for root in roots(model):
        root.to(dtype=dtype)
        if key not in ("fp32", "fp16", "bf16"):
            conv1d_as_linear(root)
        if key == "int8_ao":
            ao_quantize(root)
        elif key not in ("fp32", "fp16", "bf16"):
            torchao_api().quantize_(root, _config(key, device), filter_fn=_linear_filter(key))


def make(model, key: str, name: str = ""):
    """A copy of `model` (a wrapper holding torch modules, or a module) in precision `key`.

    The copy gets .variant (the key that ran), .notices (the original's plus why a variant fell back or
    what it costs here) and, when the wrapper has them, .label and .dtype updated. `name` is the registry
    key (for the QAT weights). A variant the device or model cannot run falls back to fp32 with a notice.
    """
    device = str(getattr(model, "device", "cpu"))
    notices = tuple(getattr(model, "notices", ()))
    reason = unsupported(key, device, name)
    if reason:
        notices += (reason + " Showing fp32 instead.",)
        key = "fp32"
    out = _copy(model, _unchanged(model, key))
    try:
        with torch.no_grad():
            _apply(out, key, name, device)
    except Exception as err:  # a layer torchao refuses, a dtype a module cannot take: fall back, say so (and log
        # anything else with its traceback: a programming error is not a refusal)
        notices += (f"{VARIANTS[key].title} failed on this model ({_refusal(err, f'making {key}')}); showing fp32 "
                    "instead.",)
        key = "fp32"
        out = _copy(model)
    kept = plain_linears(out) if key not in ("fp32", "fp16", "bf16") else 0
    if kept:
        notices += (f"{kept} linear layer{'s' if kept > 1 else ''} of a shape the {VARIANTS[key].title} kernel "
                    f"cannot take stay{'' if kept > 1 else 's'} in {VARIANTS[key].dtype}.",)
    note = cost_note(key, device)
    if note:
        notices += (note,)
    out.variant, out.notices = key, notices
    if isinstance(vars(out).get("label"), str):  # an attribute of its own (a TaskModel's label is a property)
        out.label = f"{model.label} · {VARIANTS[key].title}"
    if isinstance(getattr(out, "dtype", None), str):
        out.dtype = VARIANTS[key].dtype
    return out


def first_linear(model) -> tuple[str, torch.Tensor]:
    """The name and fp32 weight [out, in] of the model's first nn.Linear (the first attention projection here)."""
    for attr, module in modules(model).items():
        for name, m in module.named_modules():
            if isinstance(m, nn.Linear):
                return ".".join(p for p in (attr, name) if p), m.weight.detach().float().cpu()
    raise UserError("This model has no linear layer to quantize.")
