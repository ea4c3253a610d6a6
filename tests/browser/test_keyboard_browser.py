"""The keyboard alone, as a student who cannot use a mouse: walk the lesson from its first step to its last, open a
head on Heads and on Patching, change the model. At every Tab stop the focus is seen: the focused element's box (and
a few pixels around it, where a ring is drawn) looks different once the focus has left it. Each lesson step moves the
focus to the step's banner, which a screen reader then reads."""
import re

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from bench.browser import RUNS_JS, STATE_JS, chromium, new_page, runs, serve, settle, visit, wait_run

BOX_JS = """e => { if (!e.isConnected) return null; const r = e.getBoundingClientRect();
  return {x: r.x, y: r.y, w: r.width, h: r.height,
          name: (e.getAttribute('aria-label') || e.innerText || e.tagName).trim().split('\\n').pop().slice(0, 60)}; }"""
BANNER_FOCUSED_JS = """() => { const e = document.activeElement;
  return e && e.closest('.st-key-lesson_banner') && e.dataset.spoken === '1' ? e.innerText : null; }"""


def _shot(page, box: dict) -> bytes:
    return page.screenshot(clip=dict(x=max(0, box["x"] - 6), y=max(0, box["y"] - 6), width=box["w"] + 12,
                                     height=box["h"] + 12))


def _visible_difference(a: bytes, b: bytes) -> int:
    """The largest difference of one colour channel between two shots of one box (0-255): antialiasing moves a pixel
    by 1 or 2, a drawn ring by far more."""
    import io

    from PIL import Image, ImageChops

    x, y = (Image.open(io.BytesIO(s)).convert("RGB") for s in (a, b))
    return max(hi for _, hi in ImageChops.difference(x, y).getextrema())


class Keyboard:
    """Tab through a page as a keyboard does, checking that each stop shows its focus."""

    def __init__(self, page):
        self.page, self.seen, self.compared, self.unseen = page, None, 0, []

    def tab(self) -> dict | None:
        """Press Tab; the stop just left is compared with how it looked while focused."""
        self.page.keyboard.press("Tab")
        self.page.wait_for_timeout(80)
        if self.seen is not None:
            handle, box, focused = self.seen
            now = handle.evaluate(BOX_JS)
            if now and (now["x"], now["y"], now["w"]) == (box["x"], box["y"], box["w"]):  # not scrolled away
                self.compared += 1
                if _shot(self.page, now) == focused and not self._seen_again(handle, now):
                    self.unseen.append(f"{box['name']} on {self.page.url}")
        handle = self.page.evaluate_handle("() => document.activeElement")
        box = handle.evaluate(BOX_JS)
        drawn = box and box["w"] > 0 and box["h"] > 0 and box["y"] >= 0 and box["y"] + box["h"] <= 720
        self.seen = (handle, box, _shot(self.page, box)) if drawn else None
        return box

    def _seen_again(self, handle, box: dict) -> bool:
        """A second look at a stop whose two shots matched: the first shot can miss the focus when a run redraws
        the page between the Tab and the shot (on a busy machine a run can still be drawing). Once nothing runs,
        focus it again, shoot, blur it, shoot: the focus is seen when the two differ; three looks, each after the
        page is still again. The walk's focus then returns to where the Tab had put it."""
        current = self.page.evaluate_handle("() => document.activeElement")
        differs = False
        for wait_ms in (80, 300, 1000):
            self.page.wait_for_function(f"() => ({STATE_JS})() === 'notRunning'", timeout=120_000)
            now = handle.evaluate(BOX_JS)
            if not now:  # redrawn away: nothing left to compare
                differs = True
                break
            handle.evaluate("e => e.focus({preventScroll: true})")
            self.page.wait_for_timeout(wait_ms)
            focused = _shot(self.page, now)
            handle.evaluate("e => e.blur()")
            self.page.wait_for_timeout(wait_ms)
            if _shot(self.page, now) != focused:
                differs = True
                break
        current.evaluate("e => e.focus({preventScroll: true})")
        return differs

    def to(self, name: str, limit: int = 90) -> None:
        """Tab until the focus is on the element named `name` (its label, or its text's last line; a name ending
        in '…' is a part of it)."""
        for _ in range(limit):
            box = self.tab()
            if box and (box["name"] == name or name.endswith("…") and name[:-1] in box["name"]):
                return
        raise AssertionError(f"{limit} Tab stops and no '{name}'")

    def press(self, *keys: str) -> None:
        """Keys on the focused element, then wait for the runs they start (none where nothing changed, e.g. a
        select box's option picked again)."""
        before = runs(self.page)
        for key in keys:
            self.page.keyboard.press(key)
            self.page.wait_for_timeout(150)
        try:
            self.page.wait_for_function(f"() => ({RUNS_JS})() > {before} || ({STATE_JS})() !== 'notRunning'",
                                        timeout=3_000)
        except PlaywrightTimeout:
            return
        settle(self.page, before)
        self.seen = None

    def pick(self, name: str, option: str) -> None:
        """A select box: Tab to it, type the option, Enter."""
        self.to(name)
        self.page.keyboard.type(option)
        self.press("Enter")

    def step(self, name: str) -> None:
        """The box the focus is on (`name`) moved one option down by the arrow keys and Enter, as a keyboard user
        browses: the box keeps the focus, and once nothing runs it is drawn visibly focused (Streamlit drops its own
        border with this rerun; ui.runtime.streamlit_private draws a ring): shot as it is, blurred, shot again, with
        no new focus event between (one would redraw Streamlit's border), the two differ by more than antialiasing."""
        before = runs(self.page)
        for key in ("ArrowDown", "Enter"):
            self.page.keyboard.press(key)
            self.page.wait_for_timeout(150)
        wait_run(self.page, before, 180)  # the pick changes the value: its run, however late a busy machine starts it
        self.seen = None
        self.page.wait_for_timeout(300)
        handle = self.page.evaluate_handle("() => document.activeElement")
        box = handle.evaluate(BOX_JS)
        assert box and box["name"] == name, box
        self.compared += 1
        focused = _shot(self.page, box)
        handle.evaluate("e => e.blur()")
        self.page.wait_for_timeout(80)
        if _visible_difference(_shot(self.page, box), focused) < 32:
            self.unseen.append(f"{name} after an arrow pick on {self.page.url}")
        handle.evaluate("e => e.focus({preventScroll: true})")


def test_the_lesson_heads_patching_and_the_model_by_keyboard_alone():
    from ui.classroom.lesson import LESSON

    with serve(timeout_s=180) as url, chromium() as browser:
        page = new_page(browser, width=1280, height=720)
        keys = Keyboard(page)
        visit(page, f"{url}/?lesson=1")  # the teacher's link
        page.wait_for_function(BANNER_FOCUSED_JS, timeout=20_000)
        for n in range(2, len(LESSON) + 1):
            keys.to("Next →")
            keys.press("Enter")
            page.wait_for_function(f"() => ({BANNER_FOCUSED_JS})()?.includes('step {n} of {len(LESSON)}')",
                                   timeout=60_000)  # the focus is on the step's banner: a screen reader reads it
        # the last step's circuit job has ended, and the whole page has run again to show it: a run its end starts
        # (ui.runtime.work's watcher) cannot then land after the keys below and keep the page where it was
        page.wait_for_function(f"() => !document.querySelector('[data-testid=stProgress]') && ({STATE_JS})() === "
                               "'notRunning'", timeout=180_000)
        keys.to("End lesson")
        keys.press("Enter")

        page.evaluate("() => document.activeElement.blur()")
        keys.to("Heads")  # the navigation's link
        keys.press("Enter")
        keys.to("Layer")
        keys.step("Layer")  # L1, by the arrow keys
        keys.pick("Head", "H11")
        assert page.locator("[role=figure][aria-label^='L1 H11.']").count() == 1  # the head opened, and named

        page.evaluate("() => document.activeElement.blur()")
        keys.to("Patching")
        keys.press("Enter")
        keys.to("Switch to GPT…")  # BERT has no next token to patch: the page offers a decoder
        keys.press("Enter")
        assert "model=gpt" in page.url
        keys.pick("Layer to open", "L2")
        keys.pick("Head to open", "H1")
        keys.to("H1 in Inside a head…")
        keys.press("Enter")
        assert "/inside_head?" in page.url and re.search(r"=L2\b", page.url) and re.search(r"=H1\b", page.url)

        page.evaluate("() => document.activeElement.blur()")
        keys.pick("Model", "tiny")
        assert "model=tiny" in page.url
        assert keys.compared > 100, keys.compared  # the walk compared real stops
        assert not keys.unseen, f"focus not seen on: {keys.unseen[:5]}"
