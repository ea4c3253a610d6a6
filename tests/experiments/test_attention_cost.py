"""The cost measurement: its memory reading against a known allocation, dense against tiled by the size of the
work (never by wall-clock), the fitted slope, and that its processes end."""
import math
import os

import pytest

from experiments import attention_cost as ac


def calibrate(n_bytes: int = 64 * 2**20) -> int:
    """What the memory measurement reads for one known allocation (the test's check of the measurement; the app
    only measures attention)."""
    with ac.Runner() as runner:
        return runner.ask("memory", what="alloc", n_bytes=n_bytes)["peak_bytes"]


def test_peak_memory_reads_a_known_allocation():
    size = 48 * 2**20
    got = calibrate(size)
    assert size <= got <= size + 2 * 2**20


def test_a_known_allocation_reads_the_same_under_a_big_parent():
    """bench.efficient's peak_bytes come from these children: started by a 1.2 GB process (as the full bench run is),
    they still read their own allocation, not the parent's peak (Linux hands that to ru_maxrss, never to VmHWM)."""
    held = b"\x01" * (1200 << 20)  # written, so resident
    size = 48 * 2**20
    got = calibrate(size)
    del held
    assert size <= got <= size + 2 * 2**20


@pytest.mark.slow
def test_dense_holds_the_score_matrix_and_tiled_does_not():
    n = 2048
    with ac.Runner() as runner:
        dense, tiled, window = (runner.measure(m, n) for m in ("dense", "tiled", "sliding_window"))
        again = runner.measure("tiled", n)
        servers = list(runner.procs.values())
    assert len(servers) == 2 and all(p.poll() is not None for p in servers)  # both fork servers end with the block
    assert abs(again["peak_bytes"] - tiled["peak_bytes"]) <= 256 * 1024  # the same call reads the same
    scores, tile = n * n * 4, n * ac.BLOCK * 4  # one float32 (n, n) matrix; one (n, 64) block of columns
    assert dense["peak_bytes"] >= scores  # scores and softmax: at least one whole matrix at a time
    assert tiled["peak_bytes"] <= 16 * tile  # a few (n, 64) arrays: grows like n, not n^2
    assert window["peak_bytes"] <= 40 * tile and window["mask_bytes"] == n * n  # 5 blocks of keys per query block
    assert all(p["seconds"] > 0 and p["n"] == n and p["device"] == "cpu" for p in (dense, tiled, window))


@pytest.mark.slow
def test_curves_report_progress_for_every_point():
    seen = []
    data = ac.curves(("tiled", "sdpa"), (256, 512), progress=lambda f, what: seen.append((f, what)))
    assert sorted(data) == ["sdpa", "tiled"] and sorted(data["tiled"]) == [256, 512]
    assert [f for f, _ in seen] == [0.25, 0.5, 0.75, 1.0] and "n = 512" in seen[-1][1]


def test_slope_of_a_power_law():
    ns = [256, 1024, 4096, 16384]
    assert ac.slope(ns, [n**2 * 1e-9 for n in ns]) == pytest.approx(2)
    assert ac.slope(ns, [n * 3.0 for n in ns]) == pytest.approx(1)
    assert ac.slope([256, 512], [1.0, 4.0]) == pytest.approx(2)  # too few points above 1024: all of them
    assert math.isnan(ac.slope([256], [1.0]))


def test_bad_requests_are_refused():
    with ac.Runner() as runner:
        with pytest.raises(ValueError, match="Unknown method 'sdpa_flash'"):
            runner.measure("sdpa_flash", 256)  # a GPU kernel, not offered on cpu
        with pytest.raises(ValueError, match="at least 2 tokens"):
            runner.measure("dense", 1)
    assert "sdpa_flash" in ac.methods("cuda") and "sdpa_flash" not in ac.methods("cpu")


def test_keys_per_query_is_what_the_kernels_multiply():
    """The work count's keys per query against torch's own FLOP counter on the real kernels (matmuls only)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    n = 1024
    for method in ("dense", "sliding_window", "block_sparse", "tiled"):
        q, k, v, sparse = ac._inputs(method, n, "cpu")
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            ac._call(method, q, k, v, sparse)
        assert counter.get_total_flops() == 4 * n * ac.keys_per_query(method, n) * ac.HEAD_DIM, method
    assert ac.keys_per_query("sliding_window", 4096) == 5 * ac.BLOCK  # w = 128: two blocks each side and its own
    assert ac.keys_per_query("block_sparse", 4096) == 3 * ac.BLOCK


def test_a_point_makes_the_calls_the_work_count_says(monkeypatch):
    import torch

    calls: list[int] = []
    real = ac._call
    monkeypatch.setattr(ac, "_call", lambda method, q, *rest: (calls.append(q.shape[2]), real(method, q, *rest))[1])
    threads = torch.get_num_threads()
    try:
        for part in ("memory", "time"):
            ac._child("sdpa", 512, "cpu", part, repeats=2)
    finally:
        torch.set_num_threads(threads)
    assert sorted(calls) == [ac.WARM_N] * 2 + [512] * (2 + 2)
    assert ac.sweep_gflop(["sdpa"], [512], repeats=2) * 1e9 == pytest.approx(  # each of those calls counted
        4 * ac.call_flops("sdpa", 512) + 2 * ac.call_flops("sdpa", ac.WARM_N))


def test_the_hosted_maximum_sweep_is_within_its_bound():
    import limits

    hosted, laptop = limits.HOSTED, limits.LAPTOP
    sizes = [n for n in ac.SIZES if n <= hosted.attention_cost_n]
    assert ac.sweep_gflop(ac.methods("cpu"), sizes, hosted.attention_cost_repeats) <= hosted.attention_cost_gflop
    top = max(sizes)  # the largest dense point's two (n, n) float32 and its q, k, v: what one child holds at most
    assert (2 * top * top + 3 * top * ac.HEAD_DIM) * 4 <= 256 * 2**20  # the button is offered at the hosted maximum
    # the bound bites: the laptop's maximum, or every repeat of the laptop at 4,096 and 8,192, is refused there
    bound = hosted.attention_cost_gflop
    assert ac.sweep_gflop(ac.methods("cpu"), ac.SIZES, hosted.attention_cost_repeats) > bound
    assert ac.sweep_gflop(ac.methods("cpu"), sizes + [8192], laptop.attention_cost_repeats) > bound
    assert ac.sweep_gflop(ac.methods("cuda"), ac.SIZES, laptop.attention_cost_repeats) <= laptop.attention_cost_gflop


@pytest.mark.slow  # a sweep's helper processes started and ended: ~6 s
def test_the_helper_processes_are_gone_after_a_sweep():
    data = ac.curves(("sdpa",), (256,), repeats=1)
    assert data["sdpa"][256]["seconds"] > 0
    children = {int(p) for task in os.listdir("/proc/self/task")
                for p in open(f"/proc/self/task/{task}/children").read().split()}
    alive = [pid for pid in children if not open(f"/proc/{pid}/stat").read().split(") ")[1].startswith("Z")]
    assert alive == []  # no server and no measuring child is left running (the servers were reaped)
    with ac.Runner() as runner:
        runner.measure("sdpa", 256, repeats=1)
        groups = [p.pid for p in runner.procs.values()]
    for group in groups:  # each server's process group (it and every child it forked) is gone
        with pytest.raises(ProcessLookupError):
            os.killpg(group, 0)
