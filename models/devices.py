"""Which torch devices and dtypes exist here, and a safe way to move onto one.

Lists only what torch can see; never installs or probes drivers beyond torch's own checks.
torch is imported on first need, not at import: the app's first page paints without it, and a
machine with no sign of a GPU (no /dev/nvidia*, /dev/kfd, /dev/dxg, not Apple silicon) is cpu-only
without asking torch. DTYPES is built on first access.
"""
from __future__ import annotations

import functools
import glob
import platform
import sys

DTYPE_NAMES = ("float32", "float16", "bfloat16")


def __getattr__(name: str):
    if name == "DTYPES":  # {"float32": torch.float32, ...}, built when first asked for
        import torch

        return {n: getattr(torch, n) for n in DTYPE_NAMES}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _gpu_possible() -> bool:
    """A cheap look for GPU device files or Apple silicon, so a plain cpu machine never pays for torch here
    (once per process: every page run asks)."""
    apple = sys.platform == "darwin" and platform.machine() == "arm64"
    return apple or bool(glob.glob("/dev/nvidia[0-9]*") or glob.glob("/dev/kfd") or glob.glob("/dev/dxg"))


def available_devices() -> list[str]:
    """cpu always; cuda and mps when torch sees them. e.g. ['cpu', 'cuda']"""
    found = ["cpu"]
    if not _gpu_possible():
        return found
    import torch

    if torch.cuda.is_available():
        found.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


CPU_FEATURES = ("avx2", "avx512", "avx512_bf16", "amx_tile", "amx_fp16", "vnni")  # torch.cpu._is_<name>_supported
CPU_NEEDS = {  # dtype -> (features any of which computes it natively, in words)
    "bfloat16": (frozenset({"avx512_bf16", "amx_tile"}), "AVX512-BF16 or AMX"),
    "float16": (frozenset({"amx_fp16"}), "AMX-FP16"),
}


@functools.cache
def _torch_cpu_features() -> frozenset[str]:
    import torch

    return frozenset(n for n in CPU_FEATURES if getattr(torch.cpu, f"_is_{n}_supported", lambda: False)())


def cpu_features() -> frozenset[str] | None:
    """The instructions torch reports this CPU has (torch.cpu's feature checks), e.g. frozenset({'avx2'}); None
    while torch is not imported yet (the first page paints without it; ui/runtime/warm imports it at once)."""
    return _torch_cpu_features() if "torch" in sys.modules else None


def cpu_refusal(dtype: str, features: frozenset[str] | None) -> str | None:
    """Why a CPU with `features` (as torch reports them) is not offered `dtype`, or None when it is: a pure function.
    float32 always; bfloat16 with AVX512-BF16 or AMX (native bf16 dot products); float16 with AMX-FP16.
        cpu_refusal("bfloat16", frozenset({"avx2", "avx512_bf16"})) -> None"""
    if dtype == "float32":
        return None
    if features is None:
        return f"{dtype} waits until torch has reported this CPU's instructions (the next run); using float32."
    need, words = CPU_NEEDS[dtype]
    if features & need:
        return None
    has = ", ".join(f.upper().replace("_", "-") for f in CPU_FEATURES if f in features) or "none of " + ", ".join(
        f.upper().replace("_", "-") for f in CPU_FEATURES)
    return (f"{dtype} is not offered on this CPU: torch reports no {words} instructions (it has {has}), so {dtype} "
            "arithmetic would be emulated, slower than float32.")


def dtypes_for(device: str, features: frozenset[str] | None = None) -> list[str]:
    """float32 everywhere; on a GPU the half precisions too; on the CPU each one its instructions compute natively
    (cpu_refusal; `features` defaults to what torch reports here)."""
    if device != "cpu":
        return list(DTYPE_NAMES)
    found = cpu_features() if features is None else features
    return [d for d in DTYPE_NAMES if cpu_refusal(d, found) is None]


def resolve(device: str, dtype: str = "float32") -> tuple[str, str, tuple[str, ...]]:
    """Return a (device, dtype, notices) that works: falls back to cpu/float32 and says why."""
    import torch

    if device not in available_devices():
        return "cpu", "float32", (f"Device '{device}' is not available here; using cpu instead.",)
    if dtype not in dtypes_for(device):
        why = cpu_refusal(dtype, cpu_features()) if device == "cpu" else None
        return device, "float32", (why or f"{dtype} is not offered on {device}; using float32.",)
    try:
        torch.zeros(1, device=device, dtype=getattr(torch, dtype)) + 1  # a real round trip, not just a flag
    except Exception as err:  # driver or runtime failure: say it, keep serving on cpu
        return "cpu", "float32", (f"Device '{device}' failed ({type(err).__name__}); using cpu instead.",)
    return device, dtype, ()


def synchronize(device, after: object = None) -> None:
    """Wait until `device` (a torch.device or its name) has finished the work queued on it, so a timer stopped next
    times the work and not its asynchronous launch (a CUDA GPU's); nothing on cpu. `after` is the output of the work
    just launched, unused: passing it orders the forward before the wait in one expression.

        lambda m: synchronize(m.device, after=m.model(**batch))   # the timed call of one forward
    """
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
