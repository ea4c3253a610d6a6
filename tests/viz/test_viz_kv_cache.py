"""viz.kv_cache: figures carry the measurements they were given; the cache grid leaves empty slots empty."""
import numpy as np

from viz import kv_cache as V


def test_latency_and_cumulative_one_line_per_run():
    runs = {"cached": [0.001, 0.002, 0.001], "uncached": [0.01, 0.02, 0.03]}
    lat, cum = V.latency(runs), V.cumulative(runs)
    assert [t.name for t in lat.data] == ["cached", "uncached"] and lat.layout.yaxis.type == "log"
    assert lat.layout.yaxis.dtick == "D2"  # 1, 2, 5 of each decade labelled: all nine crowded 10 and 100 together
    np.testing.assert_allclose(lat.data[1].y, [10, 20, 30])
    np.testing.assert_allclose(cum.data[1].y, [0.01, 0.03, 0.06])


def test_memory_puts_measured_next_to_the_formula():
    fig = V.memory([16, 17, 18], [1024 * 16, 1024 * 17, 1024 * 18], 1024)
    np.testing.assert_allclose(fig.data[0].y, fig.data[1].y)
    np.testing.assert_allclose(fig.data[1].y, [16, 17, 18])


def test_memory_shows_a_formula_far_from_the_measure_and_a_single_position():
    """One written token gave one position: the formula's line drew nothing and the y axis (4 to 12 KiB) left out
    both the formula's 12.5 KiB and the measured 3.12."""
    fig = V.memory([25], [3200], 512)
    low, high = fig.layout.yaxis.range
    assert low == 0 and high >= 12.5 and fig.data[0].mode == "markers"
    np.testing.assert_allclose([fig.data[0].y[0], fig.data[1].y[0]], [12.5, 3.125])


def test_variants_bars_in_given_order():
    rows = [{"kind": "MHA", "kv_heads": 8, "bytes_per_token": 800, "median_ms": 2.0},
            {"kind": "MQA", "kv_heads": 1, "bytes_per_token": 100, "median_ms": 1.5}]
    fig = V.variants(rows)
    assert list(fig.data[0].y) == [800, 100] and list(fig.data[1].y) == [2.0, 1.5]
    assert list(fig.layout.xaxis.ticktext) == ["MHA (8 kv)", "MQA (1 kv)"]


def test_cache_grid_keeps_repeated_tokens_apart_and_empty_slots_empty():
    fig = V.cache_grid(np.ones((4, 3), dtype=np.float32), ["1", "1", "<b>"], capacity=6)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (4, 6) and np.isnan(z[:, 3:]).all() and (z[:, :3] == 1).all()
    assert list(fig.layout.xaxis.ticktext) == ["1 ·0", "1 ·1", "&lt;b&gt;"]
    assert list(fig.layout.yaxis.ticktext) == ["L0 k", "L0 v", "L1 k", "L1 v"]


def test_the_memory_charts_positions_are_whole_numbers():
    """Two positions (24 and 25) read '24, 24.2, … 25' on the axis: a position count is whole."""
    from viz.kv_cache import memory

    for positions in ([24, 25], list(range(1, 513))):
        x = memory(positions, [100 * t for t in positions], 100).layout.xaxis
        assert x.tickformat == "d" and x.dtick >= 1 and float(x.dtick).is_integer()
