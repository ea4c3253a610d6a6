"""A CPU buffer's bytes in order, read without mapping in pages the process has not touched (Linux).

Weights loaded from a .safetensors file are a private mapping of it: a page enters the process's RSS when first
read. Hashing every weight (experiments.corpus.identity) used to read every page, so MiniLM's whole embedding table
(47 MB, of which a sentence uses a few rows) stayed resident for good, about 42 MB more after the corpus view.
Here a page of a private file mapping that is neither present nor swapped out (/proc/self/pagemap) cannot differ
from the file, so its bytes are read from the file (the page cache, not this process's memory); every other page
is read from memory. The bytes, and so any digest of them, are the same either way.

Does not: copy the buffer, change any mapping, or know what a tensor is (the caller passes an address and a
length). Elsewhere than Linux, or where /proc cannot be read, it reads memory, as before.

    for chunk in chunks(ptr, nbytes, memory): h.update(chunk)   # memory: a memoryview of those nbytes
"""
from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _mapping(ptr: int, nbytes: int) -> tuple[str, int] | None:
    """(file, offset of ptr in it) when [ptr, ptr + nbytes) lies in one private mapping of a file that is still the
    one mapped (same inode: not replaced nor deleted since), else None."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            if start <= ptr < end:
                path = parts[5].strip() if len(parts) == 6 else ""
                private_file = parts[1].endswith("p") and parts[4] != "0" and path.startswith("/")
                if not private_file or ptr + nbytes > end or os.stat(path).st_ino != int(parts[4]):
                    return None
                return path, int(parts[2], 16) + ptr - start
    return None


def _untouched(ptr: int, nbytes: int) -> np.ndarray:
    """Per page of [ptr, ptr + nbytes): True where the page is neither present nor swapped out."""
    first, last = ptr // PAGE, (ptr + nbytes - 1) // PAGE
    with open("/proc/self/pagemap", "rb") as pagemap:
        entries = np.frombuffer(os.pread(pagemap.fileno(), (last - first + 1) * 8, first * 8), dtype="<u8")
    return (entries >> np.uint64(62)) & np.uint64(3) == 0                         # bit 63 present, bit 62 swapped


def chunks(ptr: int, nbytes: int, memory: memoryview) -> Iterator[bytes | memoryview]:
    """The nbytes at address ptr (memory: a byte view of them), as consecutive pieces: from the file for runs of
    untouched pages of a file mapping, else from memory."""
    try:
        found = _mapping(ptr, nbytes) if nbytes else None
        untouched = _untouched(ptr, nbytes) if found else None
    except (OSError, ValueError):
        found = None
    if found is None:
        yield memory
        return
    path, offset = found
    cuts = np.flatnonzero(np.diff(untouched.astype(np.int8))) + 1                # page index where a run starts
    with open(path, "rb") as f:
        for run in np.split(np.arange(len(untouched)), cuts):
            lo = max(0, (ptr // PAGE + int(run[0])) * PAGE - ptr)                # bytes into the buffer
            hi = min(nbytes, (ptr // PAGE + int(run[-1]) + 1) * PAGE - ptr)
            if untouched[run[0]]:
                piece = os.pread(f.fileno(), hi - lo, offset + lo)
                if len(piece) != hi - lo:  # the file is shorter than its mapping: memory decides
                    piece = memory[lo:hi]
                yield piece
            else:
                yield memory[lo:hi]
