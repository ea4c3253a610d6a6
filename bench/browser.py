"""A real app server and a real headless Chromium, for browser tests and browser benchmarks.

Starts `streamlit run app.py` on a free local port and Debian's Chromium through Playwright with
outside networking off. Does not install a browser: `make test` installs Debian's chromium.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# glibc gives each thread that allocates its own heap ("arena", up to 8 per core), and a freed page stays in its
# arena: with ~30 threads (sessions, jobs, torch) a replica held a few hundred MB it no longer used. Two arenas
# keep the freed memory where malloc_trim and the next request find it (docs/DEPLOY.md, "Memory per replica").
# In the environment, not set by the app: glibc fixes its arena limit once its threads have made 9 arenas, which a
# Streamlit server has done before app.py first runs (limits.arenas_unbounded warns when a hosted one lacks it).
# Every server started here has them, as `make run` and every replica (bench.replicas) start it.
ALLOCATOR = {"MALLOC_ARENA_MAX": "2"}


def views() -> list[tuple[str, str, str]]:
    """(file, title, icon) of the app's views whose file exists, in menu order."""
    from ui.views import present

    return [(v.path, v.title, v.icon) for v in present()]


class ServerURL(str):
    """The server's base URL (a plain str for callers that only need that) with the server's process id."""

    pid: int
    stats: Path | None  # see serve(stats=...)


def rss_bytes(pid: int) -> int:
    """Resident memory of a process now, from /proc/<pid>/status (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def store_bytes(url: ServerURL, timeout_s: float = 10.0) -> int:
    """Bytes the server's stores (ui.runtime.cache: models and results) hold now; the server must be
    serve(stats=...)'s."""
    before = url.stats.stat().st_mtime_ns if url.stats.exists() else 0
    os.kill(url.pid, signal.SIGUSR1)
    deadline = time.time() + timeout_s
    while not url.stats.exists() or url.stats.stat().st_mtime_ns == before:
        if time.time() > deadline:
            raise RuntimeError("the app server did not report its stores")
        time.sleep(0.02)
    return sum(store["bytes"] for store in json.loads(url.stats.read_text()).values())


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS's pick; it may be taken again before it is used)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(timeout_s: float = 60.0, env: dict | None = None, stats: Path | None = None, script: Path | None = None):
    """Yield the base URL of a fresh app server (a ServerURL: .pid is the server process); stop it afterwards.

    env: extra environment variables for the server, e.g. {"ATTENTION_EXPLORER_HOSTED": "1"}.
    stats: a file through which store_bytes(url) reads the server's stores (bench.serve_stats).
    script: another Streamlit script than app.py, run with the project's settings (.streamlit/config.toml).
    """
    if "url" in SHARED and env is None and stats is None and script is None:  # inside shared(): the one server
        yield SHARED["url"]
        return
    port = free_port()
    launcher = ["-m", "streamlit"] if stats is None else ["-m", "bench.serve_stats", str(stats)]
    cmd = [sys.executable, *launcher, "run", str(script or ROOT / "app.py"), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1", **ALLOCATOR, **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = ServerURL(f"http://127.0.0.1:{port}")
    url.pid, url.stats = proc.pid, stats
    try:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError("the app server did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@contextlib.contextmanager
def chromium():
    """Yield a Playwright browser (headless Debian Chromium); requests leave only to localhost."""
    if "browser" in SHARED:  # inside shared(): the one browser
        yield SHARED["browser"]
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


SHARED: dict = {}  # what shared() hands out while open: url, browser, first_paint; an entry may keep a page


@contextlib.contextmanager
def shared():
    """While open, serve() (with no env or stats) and chromium() hand out one app server and one Chromium instead of
    starting their own: `python -m bench --smoke` runs its browser entries on them, seconds each instead of a
    server start each. Entries still get a fresh page (new_page), so a session of their own. The server is started
    as cold_start starts one (with a stats file, Chromium open first) and its first paint is timed as cold_start
    times it (first_paint: kept for cold_start's smoke). That first page stays open until its run has ended (a
    session closed mid-run stops the run before its end starts the warm-up, ui/runtime/warm.py: imports and the
    default model), so the warm-up goes on while the caller does other work."""
    with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
        first = new_page(browser)
        start = time.perf_counter()
        with serve(stats=Path(tmp) / "stores.json") as url:
            SHARED.update(url=url, browser=browser)
            try:
                SHARED["first_paint"] = first_paint(first, url, start)
                wait_run(first, 0, timeout_s=120)
                first.close()
                yield
            finally:
                SHARED.clear()


PAINTED_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def first_paint(page, url: ServerURL, start: float) -> tuple[float, float]:
    """Open the home page of a server started at perf_counter() `start`; once its title and the sidebar's Text box
    are painted -> (seconds since start, CPU seconds the server has used)."""
    with telling(page):
        page.goto(url)
        page.get_by_role("heading", name="Attention Explorer").wait_for(timeout=120_000)
        page.get_by_label("Text", exact=True).wait_for(timeout=120_000)
        page.evaluate(PAINTED_JS)
    return time.perf_counter() - start, cpu_s(url.pid)


def cpu_s(pid: int) -> float:
    """CPU seconds (user and system) a process has used so far, from /proc/<pid>/stat (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()  # after the name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15


@contextlib.contextmanager
def telling(page):
    """Re-raise an error inside the block with what the page's main area shows (its first 400 characters): a wait
    that times out then says whether the view showed an error, a spinner or nothing at all."""
    try:
        yield
    except Exception as err:
        try:
            shown = page.evaluate("() => (document.querySelector('[data-testid=stMain]')?.innerText || '')")
        except Exception:  # the page itself is gone: the first error says enough
            raise err from None
        told = f"{err}\nthe page showed: {' | '.join(shown.split(chr(10)))[:400]!r}"
        try:
            again = type(err)(told)
        except Exception:  # an error whose constructor takes other arguments
            again = RuntimeError(told)
        raise again from err


def new_page(browser, width: int = 1400, height: int = 1000):
    """A page that refuses every request not going to the local app server, and counts the app's runs.
    browser: a Browser (the page gets a context of its own) or a BrowserContext (a fresh one is a browser
    with no cookies or session)."""
    page = browser.new_page(**({"viewport": {"width": width, "height": height}} if hasattr(browser, "contexts")
                               else {}))
    page.set_viewport_size({"width": width, "height": height})
    page.add_init_script(COUNT_RUNS_JS)
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("http://127.0.0.1")
               or route.request.url.startswith("data:") else route.abort())
    return page


def submit_text(page, text: str, wait: bool = False) -> None:
    """Type into the sidebar's Text box and apply it (Ctrl+Enter), as a person would; with wait, until it has run.
    Typing waits up to 2 minutes for a busy page (eight sessions drawing at once on 2 cores took over 30 s)."""
    before = runs(page)
    box = page.get_by_label("Text", exact=True)
    box.fill(text, timeout=120_000)
    box.press("Control+Enter", timeout=120_000)
    if wait:
        wait_run(page, before)


# counts the app's finished runs (whole-page and fragment reruns alike) from the moment the page starts: each
# message the server sends on the app's websocket is a ForwardMsg; a small one whose top-level field 6
# (script_finished) is set ends a run. (The frontend's data-test-script-state attribute misses a run that starts
# and ends within one render: it never shows "running".)
COUNT_RUNS_JS = """
window.__runsDone = 0;
(() => {
  const finished = bytes => {  // walk the protobuf's top-level fields: tag (varint), then the value
    let i = 0;
    const varint = () => {
      let value = 0, shift = 0, byte;
      do { byte = bytes[i++]; value += (byte & 127) * 2 ** shift; shift += 7; } while (byte & 128 && i < bytes.length);
      return value;
    };
    while (i < bytes.length) {
      const tag = varint(), wire = tag & 7;
      if (tag >>> 3 === 6) return true;
      if (wire === 0) varint();
      else if (wire === 2) { const length = varint(); i += length; }  // not i += varint(): i is read first
      else if (wire === 1) i += 8; else if (wire === 5) i += 4; else return false;
    }
    return false;
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", e => {
        if (e.data instanceof ArrayBuffer && e.data.byteLength < 512 && finished(new Uint8Array(e.data))) {
          window.__runsDone++;
        }
      });
    }
  };
})();
"""
RUNS_JS = "() => window.__runsDone ?? 0"
STATE_JS = "() => document.querySelector('[data-testid=stApp]')?.dataset.testScriptState"


def runs(page) -> int:
    """How many script runs (or fragment reruns) this page has seen finish since it loaded (see new_page)."""
    return page.evaluate(RUNS_JS)


def wait_run(page, after: int, timeout_s: float = 90.0) -> None:
    """Wait until a run that started after `runs(page) == after` has finished: the count grew and nothing runs."""
    page.wait_for_function(f"() => ({RUNS_JS})() > {after} && ({STATE_JS})() === 'notRunning'",
                           timeout=timeout_s * 1000)


def open_view(page, title: str, timeout_s: float = 90.0) -> None:
    """Click a view's link in the sidebar navigation (same session, sidebar kept) and wait for it to run."""
    before = runs(page)
    with telling(page):
        page.locator("[data-testid=stSidebarNavLink]", has_text=title).first.click()
        wait_run(page, before, timeout_s)


OVERVIEW_ROWS_JS = """() => {  // rows of the Heads view's overview (its key: heads_overview_<n>), once painted
  const gd = document.querySelector('[class*="st-key-heads_overview_"] .js-plotly-plot');
  if (!gd || !gd.data || !gd.data[0]) return 0;
  const painted = gd.querySelector('.heatmaplayer image');
  return painted ? gd.data[0].y.length : 0;
}"""


SELECTS_JS = """() => Object.fromEntries(
  [...document.querySelectorAll('[data-testid=stSelectbox] input[role=combobox]')]
  .map(e => [e.getAttribute('aria-label'), e.value]))"""


def selects(page) -> dict[str, str]:
    """Every selectbox on the page (sidebar included): its label -> the option it shows, e.g. {'Layer': 'L5'}."""
    return page.evaluate(SELECTS_JS)


PAGE_STATE_JS = """() => ({
  selects: Object.fromEntries([...document.querySelectorAll('[data-testid=stSelectbox] input[role=combobox]')]
    .map(e => [e.getAttribute('aria-label'), e.value])),
  checked: [...document.querySelectorAll('input[type=radio]:checked, input[type=checkbox]:checked')]
    .map(e => e.closest('label')?.innerText.trim()),
  texts: [...document.querySelectorAll('[data-testid=stTextInput] input, [data-testid=stTextArea] textarea')]
    .map(e => e.value),
  tabs: [...document.querySelectorAll('[role=tab][aria-selected=true]')].map(e => e.innerText.trim()),
  figures: [...document.querySelectorAll('.js-plotly-plot')].map(g => JSON.stringify(g.data)),
})"""


def page_state(page) -> dict:
    """What a person sees chosen on the page: selectboxes, checked radios and toggles, text boxes, open tabs,
    and every plotly figure's data (as JSON), for comparing a page with the same link opened elsewhere."""
    return page.evaluate(PAGE_STATE_JS)


# the page position of point i of a chart's last trace (its click targets, viz.common.click_targets) on its axes
_POINT_JS = """([chart, i]) => {
  const e = document.querySelectorAll('.js-plotly-plot')[chart], d = e._fullData[e._fullData.length - 1];
  const xa = e._fullLayout.xaxis, ya = e._fullLayout.yaxis, r = e.getBoundingClientRect();
  return [xa.d2p(d.x[i]) + xa._offset + r.x, ya.d2p(d.y[i]) + ya._offset + r.y];
}"""


def click_point(page, chart: int, i: int, dx: float = 0, dy: float = 0) -> None:
    """Click the mouse on point i of the last trace of the page's chart number `chart` (in page order), dx, dy pixels
    off it, and wait for the run the click starts to end."""
    before = runs(page)
    x, y = page.evaluate(_POINT_JS, [chart, i])
    page.mouse.click(x + dx, y + dy)
    settle(page, before)


def settle(page, before: int, timeout_s: float = 180.0) -> None:
    """Wait until the runs an action started (after `runs(page) == before`) have finished and every element is
    drawn; a run that ends by switching to another view is followed to the end of the next one."""
    wait_run(page, before, timeout_s)
    page.wait_for_timeout(400)
    while page.evaluate(STATE_JS) != "notRunning":  # a later run of the chain (a switch's) is on: wait for its end
        # by the state alone, not by the count: the count grows when the run's last message arrives, the state when
        # the page has drawn it, seconds later for a heavy view on a busy machine; waiting for one more run than
        # counted now would wait for a run that never comes when the end had arrived and was not drawn yet
        page.wait_for_function(f"() => ({STATE_JS})() === 'notRunning'", timeout=timeout_s * 1000)
        page.wait_for_timeout(400)
    drawn(page, timeout_s)


def choose(page, label: str, option: str) -> None:
    """Pick `option` in the selectbox labelled `label`, and wait for the app's run."""
    before = runs(page)
    box = page.get_by_role("combobox", name=label, exact=True)
    item = page.get_by_role("option", name=option, exact=True)
    box.click()
    try:  # the first menu of a fresh page may need its code loaded first: then a second click opens it
        item.wait_for(timeout=3000)
    except Exception:
        box.click()
    item.click()
    settle(page, before)


def visit(page, url: str, timeout_s: float = 180.0) -> None:
    """Open an address and wait until the app has drawn a view (a title) and finished running."""
    with telling(page):
        page.goto(url)
        settle(page, 0, timeout_s)
        page.locator("h1").first.wait_for(timeout=timeout_s * 1000)


def drawn(page, timeout_s: float = 60.0) -> None:
    """Wait until no element is still a placeholder (widgets and charts load their code on first use)."""
    page.wait_for_function("() => !document.querySelector('[data-testid=stSkeleton]')", timeout=timeout_s * 1000)
