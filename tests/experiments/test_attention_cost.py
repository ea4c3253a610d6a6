"""The cost measurement: its memory reading against a known allocation, dense against tiled by the size of the
work (never by wall-clock), the fitted slope, and that its processes end."""
import math

import pytest

from experiments import attention_cost as ac


def test_peak_memory_reads_a_known_allocation():
    size = 48 * 2**20
    got = ac.calibrate(size)
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
