"""The load test's plan covers the app: every view of the navigation, each heavy view at a hosted maximum its
widgets accept, uploads where a view takes a file. The run itself is the slow test at the end."""
import pytest

import limits
from bench import load
from bench.student import views
from ui.views import present


def test_students_visit_every_view_of_the_navigation():
    assert views() == ["" if v.stem == "home" else v.stem for v in present()]
    assert len(views()) == len(present()) and views()[0] == ""


def test_which_students_upload():
    assert [i for i in range(8) if load._uploads(i, 3)] == [1, 4, 7]
    assert [i for i in range(3) if load._uploads(i, 1)] == [0, 1, 2] and not any(load._uploads(i, 0) for i in range(3))


def test_heavy_requests_are_the_views_own_settings_at_the_hosted_caps():
    prefix = {v.stem: v.prefix for v in present()}
    heavy = load.heavy_requests()
    named = {"kv_cache", "sinks", "sparse", "tiled", "pruning", "corpus", "precision", "attribution"}
    assert named <= set(heavy) <= set(views())
    for view, (query, _) in heavy.items():
        assert all(key.startswith(prefix[view]) for key in query), (view, query)
    caps = limits.HOSTED
    assert heavy["sinks"][0]["sink_tokens"] == str(caps.stream_tokens)
    assert int(heavy["corpus"][0]["corpus_n"]) <= caps.corpus_sentences
    assert heavy["precision"][0]["quant_items"] == str(caps.precision_items)
    assert heavy["attribution"][0]["attr_steps"] == "512"  # the most integrated-gradients steps a request may ask
    assert set(load.UPLOADS) <= set(views())


@pytest.mark.slow
def test_two_students_through_every_view_with_uploads_and_no_errors():
    out = load.run_load(2, 1, heavy_every=0, upload_every=1, settle_s=0)
    assert out["errors"] == 0, out["first_errors"]
    assert out["views"] == [v or "home" for v in views()] and out["upload_students"] == 2
    assert all(out["per_view"][v]["pages"] == 2 for v in out["views"]), out["per_view"]
    assert out["rss_peak_children_bytes"] >= out["rss_max_bytes"] > 0


def test_the_process_trees_peak_is_read_with_the_replicas_own_reading(monkeypatch):
    """A replica that frees memory between two reads of its RSS: its tree's peak uses the same reading as its own
    peak, so the tree is never reported smaller than the replica alone (a 2-student run once read 0.5 MB less)."""
    import itertools
    import os
    import threading

    import bench.browser

    falling = itertools.count(10_000_000, -1_000_000)  # each read 1 MB less than the one before
    stop = threading.Event()

    def rss(pid):
        stop.set()  # one sample
        return next(falling)

    monkeypatch.setattr(bench.browser, "rss_bytes", rss)
    peak, tree = {}, {}
    load._sample_rss([os.getpid()], peak, tree, stop)
    assert tree[os.getpid()] >= peak[os.getpid()] == 10_000_000
