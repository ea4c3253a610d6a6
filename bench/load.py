"""load_students: N simulated students through every view, on 1 and on 3 replicas behind nginx.

    python -m bench.load                      # 30 students, 1 then 3 replicas, hosted mode; one JSON line each
    python -m bench.load --students 4 --replicas 1 --no-ratio --json out.json

Each student is one Streamlit session spoken to as the browser does, over the app's websocket with its
protobuf messages (no browser: 30 Chromium tabs would measure the tabs on a 2-core machine, not the server).
A student first loads the page through nginx (which sets the sticky cookie and Streamlit's XSRF cookie), opens
the websocket with those cookies (bench/student.py), then visits every view of the navigation in a shuffled
order with their own sentence, bound to the URL as a share link would carry it. Every tenth student asks each
heavy view for its hosted maximum instead (HEAVY: KV generation, the sinks stream, the sparse and tiled cost
sweeps, the pruning curve, the whole built-in corpus, precision's timed variants and its comparison on the text,
attribution's gradients and erasure at the most steps), so light pages are timed
while heavy work runs; every third uploads a text file in BPE merges and in Heads across a corpus (through the
upload URL the server hands out, as the browser does). Page time: from asking for the run until the server says
the script finished. Errors: an exception drawn in the page, a run that did not finish, a refused connection or
upload. Per view: p50/p95 of the light visits (uploads included), and the heavy requests' median apart. RSS: each
replica's resident memory, and its process tree (the replica and every process under it, each one's RSS
summed), sampled every 0.5 s; rss_after_bytes is taken 20 s after the last student left. It does not click
through every widget or run JavaScript (tests/browser covers the page in a real browser).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import threading
import time

from bench.student import Student, sentence, views
from bench.warm import warm

# the largest KV request hosted mode lets through: ~210 MB of decoder (cap 256 MiB), ~14 GFLOP cached (cap 40)
HEAVY_KV = {"kv_layers": "16", "kv_d_model": "512", "kv_nh": "8", "kv_kvh": "8", "kv_tokens": "128"}
HEAVY_TIMEOUT_S = 600.0  # a heavy request that runs in the page (the pruning curve, a corpus run) may take minutes
UPLOADS = {"bpe": {"bpe_source": "Upload"}, "corpus": {"corpus_source": "Upload"}}  # view -> the query that shows it


def heavy_requests() -> dict[str, tuple[dict, str | None]]:
    """view -> (query at the hosted maximum, the label the button to press starts with, or None: the query's
    toggle starts it)."""
    import limits
    from data import corpus
    from experiments.attribution_methods import STEPS

    caps = limits.HOSTED
    return {"kv_cache": (HEAVY_KV, "Generate"),
            "sinks": ({"sink_tokens": str(caps.stream_tokens)}, "Stream the text"),
            "sparse": ({}, "Measure"), "tiled": ({}, "Measure"),  # every method up to attention_cost_n
            "pruning": ({"prune_curve": "true", "prune_seeds": "6"}, None),
            "corpus": ({"corpus_n": str(min(len(corpus.builtin().sentences), caps.corpus_sentences) // 50 * 50)},
                       None),
            "precision": ({"quant_measure": "true", "quant_items": str(caps.precision_items),
                           "quant_runs": str(caps.precision_runs), "quant_batch": str(caps.precision_batch)},
                          "Compare the variants"),  # the toggle measures; the button compares on the text
            "attribution": ({"attr_steps": str(STEPS[1])}, "Integrated gradients")}  # IG, occlusion, erasure


def _text_file(rng: random.Random) -> bytes:
    """A student's own notes: ~40 sentences, ~3 KB of UTF-8 text."""
    return "\n".join(sentence(rng) for _ in range(40)).encode()


async def _student(i: int, url: str, heavy: bool, uploads: bool, times: list, errors: list,
                   start_gate: asyncio.Event) -> None:
    rng = random.Random(i)
    s = Student(url)
    heavies = heavy_requests() if heavy else {}
    await start_gate.wait()
    await asyncio.sleep(rng.uniform(0, 3))  # students do not all click at the same instant
    try:
        await s.open()
        text = sentence(rng)
        order = views()
        rng.shuffle(order)
        for view in order:
            if view in heavies:  # the hosted maximum, once: the request may be refused (a busy server), not fail
                query, label = heavies[view]
                if view == "sinks":  # a window of its own: the same request twice would show the first one's result
                    query = {**query, "sink_w": str(40 + i)}
                start = time.perf_counter()
                if label:
                    errors += [p for p in await s.press(view, {"text": text, **query}, label, HEAVY_TIMEOUT_S)
                               if "no button" in p or "Error" in p or "no end" in p]
                else:
                    _, problems, _ = await s.run(view, {"text": text, **query}, timeout_s=HEAVY_TIMEOUT_S)
                    errors += problems
                times.append((view, time.perf_counter() - start, True))
            elif uploads and view in UPLOADS:
                seconds, problems = await s.upload(view, {"text": text, **UPLOADS[view]}, f"notes{i}.txt",
                                                   _text_file(rng), HEAVY_TIMEOUT_S)  # a corpus run: it may queue
                times.append((view, seconds, False))
                errors += problems
            else:
                seconds, problems, _ = await s.run(view, {"text": text})
                times.append((view, seconds, False))
                errors += problems
            await asyncio.sleep(rng.uniform(0.5, 2.0))  # reading the page
    except Exception as err:  # noqa: BLE001 - a refused or dropped connection is an error of the run
        errors.append(f"student {i}: {type(err).__name__}: {err}")
    finally:
        await s.close()


def _tree(pid: int) -> list[int]:
    """pid and every process under it (Linux: /proc/<pid>/task/*/children)."""
    found = [pid]
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            for child in f.read().split():
                try:
                    found += _tree(int(child))
                except OSError:  # it ended meanwhile
                    pass
    return found


def _sample_rss(pids: list[int], peak: dict, tree_peak: dict, stop: threading.Event) -> None:
    from bench.browser import rss_bytes

    while not stop.is_set():
        for pid in pids:
            try:
                own = rss_bytes(pid)
                peak[pid] = max(peak.get(pid, 0), own)
                tree = own  # the same reading: the tree's peak is never below the replica's own
                for p in _tree(pid)[1:]:
                    try:
                        tree += rss_bytes(p)
                    except (OSError, RuntimeError):  # it ended meanwhile
                        pass
                tree_peak[pid] = max(tree_peak.get(pid, 0), tree)
            except (OSError, RuntimeError):
                pass
        stop.wait(0.5)


def _uploads(i: int, every: int) -> bool:
    """Whether student i uploads: students 1, 1 + every, ... (every one when every is 1; none when 0)."""
    return every > 0 and (i + every - 1) % every == 0


def _pct(values: list[float], q: float) -> float | None:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 3) if values else None


def run_load(students: int, replicas: int, heavy_every: int = 10, upload_every: int = 3,
             settle_s: float = 20.0) -> dict:
    """Start `replicas` behind nginx, warm each by its own port, run `students` at once through every view;
    errors, p50/p95 page time overall and per view, RSS of each replica and of its process tree."""
    from bench.browser import rss_bytes
    from bench.replicas import cluster

    with cluster(replicas) as c:
        async def main() -> tuple[list, list, float]:
            for port in c.ports:  # each replica's first visit of each view (imports, model loads) is not timed:
                await warm(f"http://127.0.0.1:{port}")  # a teacher warms every replica before class
            times, errors, gate = [], [], asyncio.Event()
            tasks = [asyncio.create_task(_student(
                i, c.url, heavy_every > 0 and i % heavy_every == 0, _uploads(i, upload_every),
                times, errors, gate)) for i in range(students)]
            start = time.perf_counter()
            gate.set()
            await asyncio.gather(*tasks)
            return times, errors, time.perf_counter() - start

        peak, tree_peak, stop = {}, {}, threading.Event()
        sampler = threading.Thread(target=_sample_rss, args=(c.pids, peak, tree_peak, stop), daemon=True)
        sampler.start()
        times, errors, wall = asyncio.run(main())
        stop.set()
        sampler.join()
        time.sleep(settle_s)
        after = [rss_bytes(pid) for pid in c.pids]
    light = [t for _, t, heavy in times if not heavy]
    visited = views()
    per_view = {v or "home": {"p50_s": _pct([t for w, t, h in times if w == v and not h], 0.5),
                              "p95_s": _pct([t for w, t, h in times if w == v and not h], 0.95),
                              "pages": sum(1 for w, _, h in times if w == v and not h)} for v in visited}
    heavy_s = {v: round(statistics.median(ts), 2) for v in heavy_requests()
               if (ts := [t for w, t, h in times if w == v and h])}
    return {"sessions": students, "replicas": replicas, "errors": len(errors), "p50_s": _pct(light, 0.5),
            "p95_s": _pct(light, 0.95), "views": [v or "home" for v in visited],
            "rss_max_bytes": max(peak.values()) if peak else None,
            "rss_peak_children_bytes": max(tree_peak.values()) if tree_peak else None,
            "rss_per_replica_bytes": [peak.get(pid) for pid in c.pids],
            "rss_tree_per_replica_bytes": [tree_peak.get(pid) for pid in c.pids], "rss_after_bytes": after,
            "pages": len(times), "heavy_students": sum(1 for i in range(students) if heavy_every and
                                                        i % heavy_every == 0),
            "upload_students": sum(1 for i in range(students) if _uploads(i, upload_every)),
            "wall_s": round(wall, 1), "per_view": per_view, "heavy_median_s": heavy_s, "first_errors": errors[:5]}


def light_under_heavy(heavy: int = 2, repeats: int = 5) -> dict:
    """A light page (heads, a new sentence each time) in one session, alone and while `heavy` other sessions run
    KV generation at the hosted maximum (background jobs), on one replica: medians and their ratio."""
    from bench.replicas import cluster

    def cpu_s(pid: int) -> float:  # user + system CPU seconds of the replica and its threads so far
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def main(url: str, pid: int) -> dict:
        await warm(url)
        light = Student(url)
        await light.open()
        rng = random.Random(0)
        cpu0, t0 = cpu_s(pid), time.perf_counter()
        alone = [(await light.run("heads", {"text": sentence(rng)}))[0] for _ in range(repeats)]
        cpu1, t1 = cpu_s(pid), time.perf_counter()
        others = [Student(url) for _ in range(heavy)]
        for o in others:
            await o.open()
            problems = await o.press("kv_cache", {"text": "x", **HEAVY_KV}, "Generate")
            assert not problems, problems
        busy = []
        for _ in range(repeats):
            busy.append((await light.run("heads", {"text": sentence(rng)}))[0])
            await asyncio.sleep(0.5)
        cpu2, t2 = cpu_s(pid), time.perf_counter()
        for s in [light, *others]:
            await s.close()
        a, b = statistics.median(alone), statistics.median(busy)
        # the replica's CPU use (cores) in each phase: higher while busy shows the heavy jobs really ran
        return {"light_alone_s": round(a, 3), "light_with_heavy_s": round(b, 3), "ratio": round(b / a, 2),
                "heavy_sessions": heavy, "replica_cores_alone": round((cpu1 - cpu0) / (t1 - t0), 2),
                "replica_cores_busy": round((cpu2 - cpu1) / (t2 - t1), 2)}

    with cluster(1) as c:
        return asyncio.run(main(c.url, c.pids[0]))


def measure(quick: bool) -> dict:
    """bench figure `load_students`: the largest run (30 students on 1 replica; quick: 4 students)."""
    return run_load(4 if quick else 30, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--replicas", type=int, nargs="*", default=[1, 3])
    parser.add_argument("--heavy-every", type=int, default=10, help="every k-th student asks every heavy view for "
                        "its hosted maximum (0: none)")
    parser.add_argument("--upload-every", type=int, default=3, help="every k-th student uploads files (0: none)")
    parser.add_argument("--json", help="write the runs here; the largest under the key load_students")
    parser.add_argument("--no-ratio", action="store_true", help="skip the light-page-under-heavy-jobs measurement")
    args = parser.parse_args()
    ratio = None if args.no_ratio else light_under_heavy()
    print(json.dumps({"light_under_heavy": ratio}), flush=True)
    runs = []
    for n in args.replicas:
        runs.append(run_load(args.students, n, args.heavy_every, args.upload_every))
        print(json.dumps(runs[-1]), flush=True)
    if args.json:
        largest = max(runs, key=lambda r: (r["sessions"], -r["replicas"]))
        keys = ("sessions", "replicas", "errors", "p50_s", "p95_s", "views", "per_view", "rss_max_bytes",
                "rss_peak_children_bytes")
        with open(args.json, "w") as f:
            json.dump({"load_students": {k: largest[k] for k in keys} | {"runs": runs, "light_under_heavy": ratio}},
                      f, indent=2)


if __name__ == "__main__":
    main()
