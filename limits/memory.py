"""This process's own resident memory, read from /proc/self/status (Linux): now, and its high-water mark.

    resident_bytes()  -> 412_000_000   (VmRSS)
    peak_bytes()      -> 655_000_000   (VmHWM: the most this process's own memory was resident)

Why not resource.getrusage(...).ru_maxrss for a child's peak: Linux carries the peak of the process that started
it across fork and exec into ru_maxrss, so a child of a 2.5 GB Python process reads 2.5 GB at its first line.
VmHWM belongs to the child's own address space, which exec replaces. Writing 5 to /proc/self/clear_refs resets it
(reset_peak). release_freed() gives freed heap pages back; map_large_blocks() has glibc give each large block its
own mapping, returned when it is freed. Does not count child processes, and is not a cap: the caps are in
limits/__init__.py.
"""
from __future__ import annotations

import ctypes
import gc


def _status(field: str) -> int:
    """A byte count from /proc/self/status ('VmRSS', 'VmHWM')."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"{field} is not in /proc/self/status")


def resident_bytes() -> int:
    """Resident memory of this process now (VmRSS)."""
    return _status("VmRSS")


def peak_bytes() -> int:
    """The high-water mark of this process's own resident memory (VmHWM), since it started or reset_peak()."""
    return _status("VmHWM")


def release_freed(collect: bool = False) -> None:
    """Hand the heap pages this process freed back to the system (glibc's malloc_trim(0), every arena); glibc keeps
    them otherwise, so a server would stay at its peak after a heavy request. collect: run Python's collector first,
    for objects only a reference cycle still holds (a quantized module's copy can). A no-op without glibc."""
    if collect:
        gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


M_MMAP_THRESHOLD = -3        # glibc's mallopt parameter
LARGE_BLOCK_BYTES = 128 << 10  # glibc's own starting threshold, kept fixed


def map_large_blocks(threshold: int = LARGE_BLOCK_BYTES) -> bool:
    """Give every block of `threshold` bytes or more its own mapping, which free() hands back at once (glibc's
    mallopt(M_MMAP_THRESHOLD)). Left alone, glibc raises the threshold to the largest mapped block freed so far (up
    to 32 MB): after the first big tensor is freed, tensors land in the heap, and a freed one stays resident between
    live ones until a trim. True when glibc took it; False without glibc."""
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False


def reset_peak() -> None:
    """Start the high-water mark again from the resident memory now."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
