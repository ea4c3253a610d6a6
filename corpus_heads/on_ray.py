"""The corpus statistics on Ray Data: shards as rows, one model per worker, the app's merge on the driver.

The corpus becomes a dataset of shards (a row = the first sentence's position and experiments.corpus.SHARD
sentences, cut exactly where the one-process run cuts them). map_batches runs ShardWorker, a callable class:
Ray starts one actor per worker (num_gpus=1 each with --device cuda), its __init__ loads the model once, and
each call computes whole shards with experiments.corpus.shard_stats and ships them as .npz bytes (plain arrays,
no pickle). The driver writes each shard where experiments.corpus.run keeps it and merges them with
analysis.corpus_stats.merge. Ray schedules; nothing here assigns work to machines or retries by hand.
Workers import this project from ROOT (PYTHONPATH in the job's runtime environment): every machine of the
cluster needs a checkout at the same path and the same virtual environment (docs/SCALE.md).
Needs the optional extra `cluster` (ray[data]); the app never imports this module.
"""
from __future__ import annotations

import io
import json
import os
import time
import uuid
from pathlib import Path

import numpy as np

from analysis import corpus_stats
from analysis.corpus_stats import Shard
from experiments import corpus as ec

ROOT = Path(__file__).resolve().parent.parent
JOIN_S = 120  # how long --workers N waits for the cluster to offer N workers' CPUs (or GPUs)
START_S = 600  # how long the workers may take to start and load the model


class ShardWorker:
    """One per Ray worker: the model is loaded once, here; each batch of shard rows -> their statistics."""

    def __init__(self, spec: str, device: str):
        import ray

        import models

        self.model = models.load(spec, device=device)
        self.node = ray.get_runtime_context().get_node_id()
        self.model_id = ec.identity(self.model)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        blobs = []
        for first, chunk in zip(batch["first"].tolist(), batch["sentences"].tolist()):
            shard = ec.shard_stats(self.model, json.loads(chunk), int(first))
            buf = io.BytesIO()
            np.savez_compressed(buf, **corpus_stats.to_arrays(shard))
            blobs.append(buf.getvalue())
        return {"first": batch["first"], "npz": np.array(blobs, dtype=object),
                "model_id": np.array([self.model_id] * len(blobs), dtype=object),
                "node": np.array([self.node] * len(blobs), dtype=object)}


def _connect(address: str) -> None:
    """auto: the cluster `ray start` made on this machine, else a new one in this process; or an address."""
    import ray

    env = {"env_vars": {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1")}}
    if ray.is_initialized():
        return
    try:
        ray.init(address=address, runtime_env=env, log_to_driver=False, logging_level="ERROR")
    except ConnectionError:
        if address != "auto":
            raise ValueError(f"No Ray cluster answers at {address}: start one with `ray start --head` "
                             "(docs/SCALE.md) or pass --ray auto.") from None
        ray.init(runtime_env=env, log_to_driver=False, logging_level="ERROR", include_dashboard=False)


def _put(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(f".{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # atomic, as experiments.corpus writes its cache


def _keep(row: dict, sentences: list[str], folder: Path, shards: list, ids: set, nodes: set) -> None:
    """One computed shard: written where experiments.corpus.run keeps it, read back for the merge."""
    first, blob = int(row["first"]), bytes(row["npz"])
    with np.load(io.BytesIO(blob), allow_pickle=False) as arrays:
        shards.append(corpus_stats.from_arrays(arrays))
    ids.add(row["model_id"])
    nodes.add(row["node"])
    _put(ec.shard_file(folder, row["model_id"], sentences[first:first + ec.SHARD], first), blob)


def run(spec: str, device: str, sentences, folder: Path, address: str = "auto", workers: int | None = None,
        progress=None) -> tuple[Shard, str, int, int]:
    """(merged statistics, the model's identity, workers, machines (Ray nodes) that computed shards) for
    `sentences` on the Ray cluster at `address`;
    each shard is also written to folder as experiments.corpus.run would write it."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ValueError("--ray needs Ray: pip install '.[cluster]' (or requirements-cluster.lock).") from None
    _connect(address)
    sentences = list(sentences)
    if not sentences:
        raise ValueError("The corpus is empty: give a file with at least one sentence.")
    gpu = device.startswith("cuda")
    kind = "GPU" if gpu else "CPU"
    deadline = time.monotonic() + JOIN_S
    while workers and int(ray.cluster_resources().get(kind, 0)) < workers and time.monotonic() < deadline:
        time.sleep(0.5)  # machines still joining: --workers N waits (a while) for N workers' resources
    have = int(ray.cluster_resources().get(kind, 0))
    if gpu and have == 0:
        raise ValueError("--device cuda, but this Ray cluster has no GPU: start its workers on GPU machines.")
    rows = [{"first": first, "sentences": json.dumps(sentences[first:first + ec.SHARD])}
            for first in range(0, len(sentences), ec.SHARD)]
    workers = max(1, min(workers or have or 1, len(rows)))
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.wait_for_min_actors_s = START_S  # every worker loads its model before the first shard: all share the work
    ds = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
        ShardWorker, fn_constructor_kwargs={"spec": spec, "device": device}, batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1),  # spread shards evenly
        num_cpus=1, num_gpus=1 if gpu else 0)
    folder.mkdir(parents=True, exist_ok=True)
    shards, ids, nodes, done = [], set(), set(), 0
    try:
        for row in ds.iter_rows():
            _keep(row, sentences, folder, shards, ids, nodes)
            done += len(sentences[int(row["first"]):int(row["first"]) + ec.SHARD])
            if progress is not None:
                progress(done, len(sentences))
    except ray.exceptions.RayError as err:  # a worker's own sentence (a model that cannot load or read), not a trace
        cause = getattr(err, "cause", None)
        raise ValueError(str(cause) if isinstance(cause, ValueError)
                         else f"A Ray worker failed: {str(err).strip().splitlines()[0]}") from None
    if len(ids) != 1:
        raise ValueError("The workers loaded different models (check that every machine has the same weights).")
    return corpus_stats.merge(shards), ids.pop(), workers, len(nodes)
