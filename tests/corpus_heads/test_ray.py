"""python -m corpus_heads --ray on a real two-node Ray cluster on this machine (a head and a worker node, separate
`ray start` processes on 127.0.0.1, one CPU each): the same statistics as the one-process run, the same shard
files, both nodes' workers used; the cluster is stopped after."""
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import corpus_stats
from bench.ray_cluster import local_cluster
from corpus_heads.__main__ import run
from data import corpus
from experiments import corpus_results

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_ray_on_two_nodes_equals_one_process(tmp_path, one_thread):
    from bench import tiny_families

    model = f"hf:{tiny_families.write('bert', tmp_path / 'bert')}"
    sentences = corpus.builtin(200).sentences
    (tmp_path / "c.txt").write_text("\n".join(sentences) + "\n")
    args = ["--model", model, "--data", str(tmp_path / "c.txt")]
    with local_cluster(2) as address:
        run([*args, "--out", str(tmp_path / "local"), "--threads", "1"])   # while the worker node joins
        out = subprocess.run([sys.executable, "-m", "corpus_heads", *args, "--out", str(tmp_path / "ray"),
                              "--ray", address, "--workers", "2"], cwd=ROOT, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
    local, ray = corpus_results.read(tmp_path / "local"), corpus_results.read(tmp_path / "ray")
    assert ray.meta["engine"] == "ray" and ray.meta["workers"] == 2 and ray.sentences == local.sentences == sentences
    assert ray.meta["nodes"] == 2  # each node's actor computed shards
    assert corpus_stats.max_abs_diff(ray.stats, local.stats) <= 1e-6
    assert ray.meta["model_id"] == local.meta["model_id"]
    assert ({p.name for p in (tmp_path / "ray" / "shards").glob("*.npz")}
            == {p.name for p in (tmp_path / "local" / "shards").glob("*.npz")})
    assert len(list((tmp_path / "ray" / "shards").glob("*.npz"))) == 4
