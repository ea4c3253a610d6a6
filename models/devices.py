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


def dtypes_for(device: str) -> list[str]:
    """float32 everywhere; half precisions only on a GPU, where they are fast and supported."""
    return ["float32"] if device == "cpu" else ["float32", "float16", "bfloat16"]


def resolve(device: str, dtype: str = "float32") -> tuple[str, str, tuple[str, ...]]:
    """Return a (device, dtype, notices) that works: falls back to cpu/float32 and says why."""
    import torch

    if device not in available_devices():
        return "cpu", "float32", (f"Device '{device}' is not available here; using cpu instead.",)
    if dtype not in dtypes_for(device):
        return device, "float32", (f"{dtype} is not offered on {device}; using float32.",)
    try:
        torch.zeros(1, device=device, dtype=getattr(torch, dtype)) + 1  # a real round trip, not just a flag
    except Exception as err:  # driver or runtime failure: say it, keep serving on cpu
        return "cpu", "float32", (f"Device '{device}' failed ({type(err).__name__}); using cpu instead.",)
    return device, dtype, ()
