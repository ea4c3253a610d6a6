"""load_students: N simulated students through every view, on 1 and on 3 replicas behind nginx.

    python -m bench.load                      # 30 students, 1 then 3 replicas, hosted mode; one JSON line each
    python -m bench.load --students 4 --replicas 1 --no-ratio --json out.json

Each student is one Streamlit session spoken to as the browser does, over the app's websocket with its
protobuf messages (no browser: 30 Chromium tabs would measure the tabs on a 2-core machine, not the server).
A student first loads the page through nginx (which sets the sticky cookie and Streamlit's XSRF cookie), opens
the websocket with those cookies, then visits every view of the navigation (views()) in a shuffled
order with their own sentence, bound to the URL as a share link would carry it. Every tenth student asks each
heavy view for its hosted maximum instead (HEAVY: KV generation, the sinks stream, the sparse and tiled cost
sweeps, the pruning curve, the whole built-in corpus, precision's timed variants), so light pages are timed
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
import urllib.parse
import urllib.request
import uuid


def views() -> list[str]:
    """Every view's page name in the navigation, home first as ''."""
    from ui.views import present

    return ["" if v.stem == "home" else v.stem for v in present()]


WORDS = "river bank music bread snow train garden money cat dog hill lake song road city light".split()
# the largest KV request hosted mode lets through: ~210 MB of decoder (cap 256 MiB), ~14 GFLOP cached (cap 40)
HEAVY_KV = {"kv_layers": "16", "kv_d_model": "512", "kv_nh": "8", "kv_kvh": "8", "kv_tokens": "128"}
HEAVY_TIMEOUT_S = 600.0  # a heavy request that runs in the page (the pruning curve, a corpus run) may take minutes
UPLOADS = {"bpe": {"bpe_source": "Upload"}, "corpus": {"corpus_source": "Upload"}}  # view -> the query that shows it


def heavy_requests() -> dict[str, tuple[dict, str | None]]:
    """view -> (query at the hosted maximum, the label the button to press starts with, or None: the query's
    toggle starts it)."""
    import limits
    from data import corpus

    caps = limits.HOSTED
    return {"kv_cache": (HEAVY_KV, "Generate"),
            "sinks": ({"sink_tokens": str(caps.stream_tokens)}, "Stream the text"),
            "sparse": ({}, "Measure"), "tiled": ({}, "Measure"),  # every method up to attention_cost_n
            "pruning": ({"prune_curve": "true", "prune_seeds": "6"}, None),
            "corpus": ({"corpus_n": str(min(len(corpus.builtin().sentences), caps.corpus_sentences) // 50 * 50)},
                       None),
            "precision": ({"quant_measure": "true", "quant_items": str(caps.precision_items),
                           "quant_runs": str(caps.precision_runs), "quant_batch": str(caps.precision_batch)}, None)}


def _sentence(rng: random.Random) -> str:
    return "The " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))) + "."


class Student:
    """One browser session over the websocket: run a page with a query string, press a button, upload a file."""

    def __init__(self, url: str) -> None:
        self.url, self.ws, self.cookie, self.refusals = url, None, "", []
        self.session_id, self.uploaders = "", {}  # the server's id of this session; file_uploader label -> id

    async def open(self) -> None:
        import websockets

        def first_get():  # the page itself, as a browser loads it first: nginx answers with the sticky cookie;
            jar = {}  # then the health check the page polls, which sets Streamlit's XSRF cookie (for uploads)
            for path in ("/", "/_stcore/health"):
                ask = urllib.request.Request(self.url + path, headers={"Cookie": "; ".join(f"{k}={v}" for k, v in
                                                                                          jar.items())})
                with urllib.request.urlopen(ask, timeout=60) as r:
                    for cookie in r.headers.get_all("Set-Cookie") or []:
                        name, _, value = cookie.split(";")[0].partition("=")
                        jar[name] = value
            return "; ".join(f"{k}={v}" for k, v in jar.items())

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
            if kind == "new_session":
                self.session_id = fwd.new_session.initialize.session_id
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                el = fwd.delta.new_element
                if el.WhichOneof("type") == "file_uploader":
                    self.uploaders[el.file_uploader.label] = el.file_uploader.id
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

    async def press(self, page: str, query: dict, label: str, timeout_s: float = 120.0) -> list[str]:
        """Run the page, then press the button whose label starts with `label`."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        _, problems, buttons = await self.run(page, query)
        ids = [i for lab, i in buttons.items() if lab.startswith(label)]
        if not ids:
            return problems + [f"{page}: no button {label!r}"]
        before = len(self.refusals)
        _, more, _ = await self.run(page, query, [WidgetState(id=ids[0], trigger_value=True)], timeout_s)
        return problems + more + self.refusals[before:]  # here a refusal means the heavy request did not run

    async def upload(self, page: str, query: dict, name: str, data: bytes) -> tuple[float, list[str]]:
        """Run the page, then upload `data` as the browser does: ask the session for an upload URL, PUT the file
        there (multipart, with the XSRF cookie's token as its header), run the page with the uploader's new state.
        -> (seconds of that last run, problems)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.Common_pb2 import UploadedFileInfo
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        self.uploaders = {}
        _, problems, _ = await self.run(page, query)
        if not self.uploaders:
            return 0.0, problems + [f"{page}: no file uploader"]
        request = BackMsg()
        request.file_urls_request.request_id = uuid.uuid4().hex
        request.file_urls_request.session_id = self.session_id
        request.file_urls_request.file_names.append(name)
        await self.ws.send(request.SerializeToString())
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await asyncio.wait_for(self.ws.recv(), 60))
            if fwd.WhichOneof("type") == "file_urls_response":
                urls = fwd.file_urls_response.file_urls[0]
                break
        xsrf = next((c.split("=", 1)[1] for c in self.cookie.split("; ") if c.startswith("_streamlit_xsrf=")), "")
        boundary = uuid.uuid4().hex
        body = (f'--{boundary}\r\nContent-Disposition: form-data; name="{urls.file_id}"; filename="{name}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        put = urllib.request.Request(self.url + urls.upload_url, data=body, method="PUT", headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}", "Cookie": self.cookie, "X-Xsrftoken": xsrf,
            "Origin": self.url})
        try:
            await asyncio.to_thread(lambda: urllib.request.urlopen(put, timeout=60).read())
        except OSError as err:
            return 0.0, problems + [f"{page}: upload refused: {err}"]
        state = WidgetState(id=next(iter(self.uploaders.values())))
        state.file_uploader_state_value.uploaded_file_info.append(
            UploadedFileInfo(file_id=urls.file_id, name=name, size=len(data), file_urls=urls))
        seconds, more, _ = await self.run(page, query, [state])
        return seconds, problems + more


def _text_file(rng: random.Random) -> bytes:
    """A student's own notes: ~40 sentences, ~3 KB of UTF-8 text."""
    return "\n".join(_sentence(rng) for _ in range(40)).encode()


async def _student(i: int, url: str, heavy: bool, uploads: bool, times: list, errors: list,
                   start_gate: asyncio.Event) -> None:
    rng = random.Random(i)
    s = Student(url)
    heavies = heavy_requests() if heavy else {}
    await start_gate.wait()
    await asyncio.sleep(rng.uniform(0, 3))  # students do not all click at the same instant
    try:
        await s.open()
        text = _sentence(rng)
        order = views()
        rng.shuffle(order)
        for view in order:
            if view in heavies:  # the hosted maximum, once: the request may be refused (a busy server), not fail
                query, label = heavies[view]
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
                                                   _text_file(rng))
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
                peak[pid] = max(peak.get(pid, 0), rss_bytes(pid))
                tree = 0
                for p in _tree(pid):
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


async def warm(url: str, timeout_s: float = 300.0) -> dict[str, float]:
    """Run every view once in one new session of the server at `url`; -> {view: seconds}. Raises RuntimeError
    naming the views that failed."""
    student, seconds, problems = Student(url), {}, []
    await student.open()
    try:
        for view in views():
            took, found, _ = await student.run(view, {}, timeout_s=timeout_s)
            seconds[view or "home"] = round(took, 2)
            problems += found
    finally:
        await student.close()
    if problems:
        raise RuntimeError("; ".join(problems))
    return seconds


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
