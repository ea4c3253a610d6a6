"""A child's peak memory is its own: limits.memory reads VmHWM, which a big parent does not leak into, while
ru_maxrss does. Tested the way the corpus bench figure failed: a big parent starts a small child."""
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import limits
from limits import memory

ROOT = Path(__file__).resolve().parents[1]
BIG = 1200 << 20  # the parent touches this much on top of what it holds
CHILD = ("import json, resource; from limits import memory; "
         "print(json.dumps([memory.peak_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024]))")


def _big_parent() -> bytes:
    held = b"\x01" * BIG  # written, so resident
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 >= BIG
    return held


def test_a_small_child_of_a_big_parent_reads_its_own_peak():
    held = _big_parent()
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, check=True)
    own, maxrss = json.loads(out.stdout)
    del held
    assert maxrss >= BIG  # what went wrong: Linux hands the parent's peak to the child's ru_maxrss
    assert 1 << 20 < own < 100 << 20  # a bare interpreter: tens of MB, not the parent's GB


def test_peak_follows_an_allocation_and_resets():
    memory.reset_peak()
    start = memory.peak_bytes()
    assert abs(start - memory.resident_bytes()) < 16 << 20
    block = b"\x02" * (200 << 20)
    assert memory.peak_bytes() >= start + (190 << 20)
    del block
    memory.reset_peak()
    assert memory.peak_bytes() < start + (100 << 20)


@pytest.mark.slow
def test_corpus_bench_figure_is_the_childs_own_under_a_big_parent():
    from bench import corpus

    held = _big_parent()
    figure = corpus.measure(quick=True, sentences=8)
    del held
    # torch, MiniLM and 8 sentences: a few hundred MB, well under the parent's touched 1.2 GB and what it held
    assert 100 << 20 < figure["peak_bytes"] < BIG, figure
    assert figure["sentences"] == 8


FREED = ("import json; from limits import memory\n"
         "chunks = [bytes(50_000) + bytes(1) for _ in range(4000)]  # ~200 MB of heap blocks, each under mmap's cut\n"
         "pin = bytes(50_000) + bytes(1)  # above them on the heap: glibc cannot give them back by shrinking its top\n"
         "held = memory.resident_bytes(); del chunks; freed = memory.resident_bytes()\n"
         "memory.release_freed(); print(json.dumps([held, freed, memory.resident_bytes()]))")


def test_release_freed_gives_freed_heap_pages_back():
    out = subprocess.run([sys.executable, "-c", FREED], cwd=ROOT, capture_output=True, text=True, check=True)
    held, freed, released = json.loads(out.stdout)
    assert held - freed < 50e6  # freed by Python, still resident: glibc keeps the pages in its heap
    assert freed - released >= 150e6  # malloc_trim(0) hands them back


MAPPED = ("import json, limits; from limits import memory  # importing limits sets hosted mode's allocator\n"
          "big = bytearray(16 << 20); del big  # glibc, left alone, now puts blocks up to 16 MB in its heap\n"
          "chunks = [bytearray(1 << 20) for _ in range(150)]  # 150 MB of 1 MB tensors' worth, each written\n"
          "pin = bytearray(1 << 20)  # above them: glibc cannot give heap blocks back by shrinking its top\n"
          "held = memory.resident_bytes(); del chunks\n"
          "print(json.dumps([held, memory.resident_bytes()]))")


@pytest.mark.parametrize("hosted", [True, False])
def test_hosted_mode_maps_large_blocks_so_a_freed_one_goes_back_at_once(hosted):
    env = {k: v for k, v in os.environ.items() if k not in (limits.ENV, "MALLOC_MMAP_THRESHOLD_")}
    if hosted:
        env[limits.ENV] = "1"
    out = subprocess.run([sys.executable, "-c", MAPPED], cwd=ROOT, capture_output=True, text=True, check=True,
                         env=env)
    held, freed = json.loads(out.stdout)
    if hosted:  # each 1 MB block had its own mapping: unmapped when freed, no trim needed
        assert held - freed >= 140e6
    else:       # the reference: in the heap, freed but still resident until a trim
        assert held - freed < 20e6


ARENAS = ("import ctypes, json, os, sys, tempfile, threading\n"
          "libc = ctypes.CDLL('libc.so.6'); libc.fopen.restype = ctypes.c_void_p\n"
          "libc.malloc.restype = ctypes.c_void_p; libc.free.argtypes = [ctypes.c_void_p]\n"
          "def heaps():  # glibc's own count of its arenas' heaps\n"
          "    path = tempfile.mktemp(); f = ctypes.c_void_p(libc.fopen(path.encode(), b'w'))\n"
          "    libc.malloc_info(0, f); libc.fclose(f); n = open(path).read().count('<heap nr='); os.unlink(path)\n"
          "    return n\n"
          "def alive(n):  # n threads that each allocate (glibc gives each an arena while it may make one), held\n"
          "    gate, done = threading.Barrier(n + 1), threading.Event()\n"
          "    def thread():\n"
          "        libc.malloc(4096); gate.wait(); done.wait()\n"
          "    for _ in range(n):\n"
          "        threading.Thread(target=thread, daemon=True).start()\n"
          "    gate.wait(); return done\n"
          "early = int(sys.argv[1]); first = alive(early) if early else None\n"
          "took = libc.mallopt(-8, 2)  # M_ARENA_MAX in glibc's malloc.h\n"
          "alive(4); print(json.dumps([took, heaps()]))")


@pytest.mark.parametrize("early", [0, 12])
def test_glibc_bounds_arenas_only_before_its_threads_have_made_them(early):
    """Why the arena count is the environment's (limits.arenas_unbounded): mallopt(M_ARENA_MAX, 2) before any thread
    keeps 4 threads to 2 arenas; after 12 threads made theirs (as Streamlit's had before app.py ran) glibc accepts
    it and the 4 new threads still get arenas of their own (its limit was fixed at the 9th: 8 per core)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES")}
    out = subprocess.run([sys.executable, "-c", ARENAS, str(early)], capture_output=True, text=True, check=True,
                         env=env, timeout=60)
    took, seen = json.loads(out.stdout)
    assert took == 1 and (seen == 2 if early == 0 else seen > early + 1), seen  # main's arena and the early ones


@pytest.mark.parametrize(("env", "warned"), [({limits.ENV: "1"}, True), ({}, False),
                                             ({limits.ENV: "1", "MALLOC_ARENA_MAX": "2"}, False),
                                             ({limits.ENV: "1", "GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, False)])
def test_a_hosted_server_started_without_bounded_arenas_says_how_to_start_it(env, warned):
    """A replica started by hand in hosted mode without MALLOC_ARENA_MAX logs the one sentence that says how to start
    it (when app.py first imports limits); a laptop, and a launcher's replica, log nothing about it."""
    base = {k: v for k, v in os.environ.items() if k not in (limits.ENV, "MALLOC_ARENA_MAX", "GLIBC_TUNABLES")}
    out = subprocess.run([sys.executable, "-c", "import limits; print(limits.arenas_unbounded() is not None)"],
                         cwd=ROOT, capture_output=True, text=True, check=True, env=base | env, timeout=60)
    assert out.stdout.strip() == str(warned) and (limits.ARENAS_NOTICE in out.stderr) == warned, out.stderr
