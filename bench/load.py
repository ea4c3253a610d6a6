"""load_students: N simulated students through the views, on 1 and on 3 replicas behind nginx.

    python -m bench.load                      # 30 students, 1 then 3 replicas, hosted mode; one JSON line each
    python -m bench.load --students 8 --replicas 2 --json out.json

Each student is one Streamlit session spoken to as the browser does, over the app's websocket with its
protobuf messages (no browser: 30 Chromium tabs would measure the tabs on a 2-core machine, not the server).
A student first loads the page through nginx (which sets the sticky cookie), opens the websocket with that
cookie, then visits the views in a shuffled order with their own sentence, bound to the URL as a share link
would carry it. Page time: from asking for the run until the server says the script finished. Errors: an
exception drawn in the page, a run that did not finish, or a refused connection. Some students also press
"Generate" in the KV view at the hosted maximum (heavy requests that run as background jobs), so light pages
are timed while heavy work runs. RSS: each replica's resident memory, sampled every 0.5 s; rss_after_bytes is
taken 20 s after the last student left. It does not click through every widget, upload files or run
JavaScript (tests/browser covers the page in a real browser).
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
import urllib.parse
import urllib.request

VIEWS = ["", "heads", "graph", "inside_head", "seq2seq", "positional", "bpe", "kv_cache", "pruning", "compare"]
WORDS = "river bank music bread snow train garden money cat dog hill lake song road city light".split()
# the largest KV request hosted mode lets through: ~210 MB of decoder (cap 256 MiB), ~14 GFLOP cached (cap 40)
HEAVY_KV = {"kv_layers": "16", "kv_d_model": "512", "kv_nh": "8", "kv_kvh": "8", "kv_tokens": "128"}


def _sentence(rng: random.Random) -> str:
    return "The " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))) + "."


class Student:
    """One browser session over the websocket: run a page with a query string, press a button."""

    def __init__(self, url: str) -> None:
        self.url, self.ws, self.cookie, self.refusals = url, None, "", []

    async def open(self) -> None:
        import websockets

        def first_get():  # the page itself, as a browser loads it first: nginx answers with the sticky cookie
            with urllib.request.urlopen(self.url + "/", timeout=60) as r:
                return "; ".join(c.split(";")[0] for c in r.headers.get_all("Set-Cookie") or [])

        self.cookie = await asyncio.to_thread(first_get)
        ws_url = self.url.replace("http://", "ws://") + "/_stcore/stream"
        self.ws = await websockets.connect(ws_url, subprotocols=["streamlit"], max_size=2**27, open_timeout=60,
                                           additional_headers={"Cookie": self.cookie, "Origin": self.url})

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def run(self, page: str, query: dict, widgets=(), timeout_s: float = 120.0) -> tuple[float, list[str], dict]:
        """Run `page` with this query string (and widget states); -> (seconds, problems, buttons {label: id}).
        self.refusals collects the st.error sentences shown (a refused request is not a server error)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        msg.rerun_script.query_string = urllib.parse.urlencode(query)
        msg.rerun_script.page_name = page
        for w in widgets:
            msg.rerun_script.widget_states.widgets.append(w)
        start = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        problems, buttons = [], {}
        deadline = start + timeout_s
        while True:
            try:
                raw = await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.perf_counter()))
            except TimeoutError:
                return time.perf_counter() - start, problems + [f"{page or 'home'}: no end after {timeout_s:.0f} s"], {}
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                el = fwd.delta.new_element
                if el.WhichOneof("type") == "exception":
                    problems.append(f"{page or 'home'}: {el.exception.type}: {el.exception.message[:200]}")
                elif el.WhichOneof("type") == "button":
                    buttons[el.button.label] = el.button.id
                elif el.WhichOneof("type") == "alert" and el.alert.format == 1:  # Alert.ERROR
                    self.refusals.append(f"{page or 'home'}: {el.alert.body[:200]}")
            elif kind == "script_finished":
                status = ForwardMsg.ScriptFinishedStatus.Name(fwd.script_finished)
                if status == "FINISHED_EARLY_FOR_RERUN":
                    continue
                if status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY":
                    continue
                if status != "FINISHED_SUCCESSFULLY":
                    problems.append(f"{page or 'home'}: {status}")
                return time.perf_counter() - start, problems, buttons

    async def press(self, page: str, query: dict, label: str) -> list[str]:
        """Run the page, then press the button whose label starts with `label`."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        _, problems, buttons = await self.run(page, query)
        ids = [i for lab, i in buttons.items() if lab.startswith(label)]
        if not ids:
            return problems + [f"{page}: no button {label!r}"]
        before = len(self.refusals)
        _, more, _ = await self.run(page, query, [WidgetState(id=ids[0], trigger_value=True)])
        return problems + more + self.refusals[before:]  # here a refusal means the heavy request did not run


async def _student(i: int, url: str, heavy: bool, times: list, errors: list, start_gate: asyncio.Event) -> None:
    rng = random.Random(i)
    s = Student(url)
    await start_gate.wait()
    await asyncio.sleep(rng.uniform(0, 3))  # students do not all click at the same instant
    try:
        await s.open()
        text = _sentence(rng)
        views = VIEWS[:]
        rng.shuffle(views)
        for view in views:
            if heavy and view == "kv_cache":
                errors += await s.press("kv_cache", {"text": text, **HEAVY_KV}, "Generate")
                continue
            seconds, problems, _ = await s.run(view, {"text": text})
            times.append((view, seconds, heavy))
            errors += problems
            await asyncio.sleep(rng.uniform(0.5, 2.0))  # reading the page
    except Exception as err:  # noqa: BLE001 - a refused or dropped connection is an error of the run
        errors.append(f"student {i}: {type(err).__name__}: {err}")
    finally:
        await s.close()


def _sample_rss(pids: list[int], peak: dict, stop: threading.Event) -> None:
    from bench.browser import rss_bytes

    while not stop.is_set():
        for pid in pids:
            try:
                peak[pid] = max(peak.get(pid, 0), rss_bytes(pid))
            except (OSError, RuntimeError):
                pass
        stop.wait(0.5)


def run_load(students: int, replicas: int, heavy_every: int = 10, settle_s: float = 20.0) -> dict:
    """Start `replicas` behind nginx, warm each, run `students` at once; errors, p50/p95 page time, RSS."""
    from bench.browser import rss_bytes
    from bench.replicas import cluster

    with cluster(replicas) as c:
        async def main() -> tuple[list, list, float]:
            for port in c.ports:  # each replica's first visit of each view (imports, model loads) is not timed:
                warm = Student(f"http://127.0.0.1:{port}")  # a teacher opens every view once before class
                await warm.open()
                for view in VIEWS:
                    await warm.run(view, {}, timeout_s=300)
                await warm.close()
            times, errors, gate = [], [], asyncio.Event()
            tasks = [asyncio.create_task(_student(i, c.url, heavy_every > 0 and i % heavy_every == 0, times, errors,
                                                  gate)) for i in range(students)]
            start = time.perf_counter()
            gate.set()
            await asyncio.gather(*tasks)
            return times, errors, time.perf_counter() - start

        peak, stop = {}, threading.Event()
        sampler = threading.Thread(target=_sample_rss, args=(c.pids, peak, stop), daemon=True)
        sampler.start()
        times, errors, wall = asyncio.run(main())
        stop.set()
        sampler.join()
        time.sleep(settle_s)
        after = [rss_bytes(pid) for pid in c.pids]
    light = sorted(t for _, t, heavy in times if not heavy)
    pct = lambda q: round(light[min(len(light) - 1, int(q * len(light)))], 3) if light else None  # noqa: E731
    return {"sessions": students, "replicas": replicas, "errors": len(errors), "p50_s": pct(0.5), "p95_s": pct(0.95),
            "rss_max_bytes": max(peak.values()) if peak else None,
            "rss_per_replica_bytes": [peak.get(pid) for pid in c.pids], "rss_after_bytes": after,
            "pages": len(times), "heavy_students": sum(1 for i in range(students) if heavy_every and
                                                        i % heavy_every == 0),
            "wall_s": round(wall, 1), "median_by_view_s": {v: round(statistics.median(
                [t for w, t, _ in times if w == v]), 3) for v in VIEWS if any(w == v for w, _, _ in times)},
            "first_errors": errors[:5]}


def light_under_heavy(heavy: int = 2, repeats: int = 5) -> dict:
    """A light page (heads, a new sentence each time) in one session, alone and while `heavy` other sessions run
    KV generation at the hosted maximum (background jobs), on one replica: medians and their ratio."""
    from bench.replicas import cluster

    def cpu_s(pid: int) -> float:  # user + system CPU seconds of the replica and its threads so far
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def main(url: str, pid: int) -> dict:
        light = Student(url)
        await light.open()
        for view in VIEWS:
            await light.run(view, {}, timeout_s=300)
        rng = random.Random(0)
        cpu0, t0 = cpu_s(pid), time.perf_counter()
        alone = [(await light.run("heads", {"text": _sentence(rng)}))[0] for _ in range(repeats)]
        cpu1, t1 = cpu_s(pid), time.perf_counter()
        others = [Student(url) for _ in range(heavy)]
        for o in others:
            await o.open()
            problems = await o.press("kv_cache", {"text": "x", **HEAVY_KV}, "Generate")
            assert not problems, problems
        busy = []
        for _ in range(repeats):
            busy.append((await light.run("heads", {"text": _sentence(rng)}))[0])
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
    parser.add_argument("--heavy-every", type=int, default=10, help="every k-th student presses Generate (0: none)")
    parser.add_argument("--json", help="write the runs here; the largest under the key load_students")
    parser.add_argument("--no-ratio", action="store_true", help="skip the light-page-under-heavy-jobs measurement")
    args = parser.parse_args()
    ratio = None if args.no_ratio else light_under_heavy()
    print(json.dumps({"light_under_heavy": ratio}), flush=True)
    runs = []
    for n in args.replicas:
        runs.append(run_load(args.students, n, args.heavy_every))
        print(json.dumps(runs[-1]), flush=True)
    if args.json:
        largest = max(runs, key=lambda r: (r["sessions"], -r["replicas"]))
        keys = ("sessions", "replicas", "errors", "p50_s", "p95_s", "rss_max_bytes")
        with open(args.json, "w") as f:
            json.dump({"load_students": {k: largest[k] for k in keys} | {"runs": runs, "light_under_heavy": ratio}},
                      f, indent=2)


if __name__ == "__main__":
    main()
