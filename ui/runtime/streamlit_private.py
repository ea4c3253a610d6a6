"""Every use of Streamlit's private parts, in one module: nothing else in the app reads them.

Streamlit is pinned (requirements.lock). Each part below names the behaviour of the pinned version it relies on,
has its own test in tests/ui/runtime/test_streamlit_private.py (so an upgrade fails a named test, not a view), and says
which public feature would replace it. What uses a public API lives where it is used, not here.

0. The script-run context: whether the current thread runs a page (ui.runtime.cache's spinners).
1. The pages manager: which page the address asks for, and running the default page instead (ui.classroom.share).
2. Navigation marks the Page object it runs (`_can_be_called`, `_default`): each run gets copies (ui.views).
3. The frontend's chunk files, named after an element plus a content hash (ui.runtime.preload).
4. `data-testid` attributes of the frontend: the app root's script state (ui.runtime.preload) and the elements
   presenter mode restyles (ui.classroom.presenter).
5. Parsing a link's value for a widget: a number that is not finite is refused like any other bad value (app.py).
6. st.stop() blocks every element drawn after it: a hook runs first (the link's notice, drawn after the view).
7. The script requests: the page a waiting rerun will run (ui.runtime.work: a job's end reruns its page only if the
   person is not on their way to another).
"""
from __future__ import annotations

import copy
import functools
import math
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
from streamlit.runtime.state import session_state


# 0. Public replacement: st.runtime.exists() says whether a server runs, not whether this thread runs a page.
def in_a_run() -> bool:
    """Whether this thread runs a page's script (False in a job's thread, a test or a command line)."""
    return get_script_run_ctx() is not None


# 1. Public replacement: a "page not found" hook or a fallback page argument on st.navigation (none in 1.67:
#    navigation opens its own dialog and runs the default page).
def intended_page_name() -> str | None:
    """The url path the address asks for ('nosuchview' for /nosuchview), before st.navigation reads it; None
    outside a run or on the home page."""
    manager = getattr(get_script_run_ctx(), "pages_manager", None)
    return getattr(manager, "intended_page_name", None) or None


def run_default_page_instead() -> None:
    """Have st.navigation run the default page as if it had been asked for (no "Page not found" dialog)."""
    get_script_run_ctx().pages_manager.set_script_intent("", "")


# 2. Public replacement: st.Page objects made on every run (public, but each resolves its path on disk) or a
#    navigation that leaves the Page it is given unchanged.
def page_copies(pages: tuple) -> list:
    """Shallow copies of st.Page objects made once per process: navigation sets `_can_be_called` (and `_default`)
    on the object it runs, which must stay per run, never shared between sessions."""
    return [copy.copy(p) for p in pages]


# 3. Public replacement: a documented way to preload element code (none: the frontend imports it on first use).
STATIC = Path(st.__file__).parent / "static" / "static" / "js"
# the frontend's chunk names (private: each is an element's name plus a content hash) of the elements views use, the
# heaviest and commonest first; ui.runtime.preload imports them while the app is idle
PRELOAD_ELEMENTS = ("PlotlyChart", "rehype-katex", "StreamlitSyntaxHighlighter", "Slider", "DownloadButton",
                    "Multiselect", "NumberInput", "Metric", "Progress", "Button", "Spinner", "DataFrame")


def frontend_chunks(names: tuple[str, ...] = PRELOAD_ELEMENTS) -> tuple[str, ...]:
    """File names of the elements' chunks in the installed Streamlit, in `names`' order; a name with no single
    match is left out: ("PlotlyChart",) -> ("PlotlyChart.D9Z0_fxz.js",)."""
    found = (sorted(STATIC.glob(f"{name}.*.js")) for name in names)
    return tuple(m[0].name for m in found if len(m) == 1)


# 4. Public replacement: a script-state event for custom code, and theme options per session (theme.baseFontSize
#    and client.toolbarMode exist, but only per server, in config.toml).
APP_IDLE_JS = 'document.querySelector("[data-testid=stApp]")?.dataset.testScriptState === "notRunning"'
PRESENTER_STYLE = """<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 20px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li,
[data-testid="stCaptionContainer"], [data-testid="stWidgetLabel"] p { font-size: 1.1rem; }
[role="combobox"], [data-baseweb="select"] div, [data-testid="stTextInput"] input,
[data-testid="stTextArea"] textarea, [data-testid="stNumberInput"] input, [role="option"],
[data-testid="stTab"] p, button p, [data-testid="stTable"], [data-testid="stDataFrame"] { font-size: 1rem !important; }
[data-testid="stMetricValue"], [data-testid="stMetricValue"] p { font-size: 3.2rem !important; line-height: 1.2; }
[data-testid="stMetricLabel"] p { font-size: 1.2rem !important; }
h1 { font-size: 2.4rem !important; padding-top: 0 !important; }
h2, h3 { font-size: 1.7rem !important; padding-top: 0.3rem !important; }
[data-testid="stToolbar"], [data-testid="stDownloadButton"],
.modebar-container { display: none !important; }
[data-testid="stMainBlockContainer"] { padding-top: 3.6rem; padding-left: 2rem; padding-right: 2rem;
  max-width: 100%; }
[data-testid="stLayoutWrapper"]:has(> .st-key-lesson_banner) { position: sticky; top: 3.75rem; z-index: 999;
  background: #fff; }
</style>"""
# a light theme: code blocks' syntax colours one step darker. Streamlit's (fixed, whatever the theme) give
# 2.8:1 for strings and 3.5:1 for comments on the block's background; these give 5.1:1 to 7.3:1 (WCAG 2.1 AA asks
# 4.5:1). Streamlit's theme has no option for them.
LIGHT_TEXT_STYLE = """<style>
.stCode .token.comment, .stCode .token.prolog, .stCode .token.doctype, .stCode .token.cdata,
.stCode .token.punctuation, .stCode .token.unchanged.line { color: #555867 !important; }
.stCode .token.attr-name, .stCode .token.property, .stCode .token.variable { color: #0b5394 !important; }
.stCode .token.boolean, .stCode .token.constant, .stCode .token.symbol, .stCode .token.string,
.stCode .token.char, .stCode .token.attr-value, .stCode .token.inserted { color: #0a7a2f !important; }
.stCode .token.number, .stCode .token.regex { color: #0b6e6e !important; }
.stCode .token.operator, .stCode .token.entity, .stCode .token.decorator, .stCode .token.atrule {
  color: #a14a00 !important; }
.stCode .token.url { color: #6d28d9 !important; }
.stCode .token.keyword, .stCode .token.tag, .stCode .token.function, .stCode .token.class-name,
.stCode .token.selector { color: #1d4ed8 !important; }
.stCode .token.important, .stCode .token.deleted { color: #b91c1c !important; }
</style>"""
# a dark theme: code comments one step lighter (Streamlit's give under 4.5:1 on a dark code block; these 6:1 or
# more), and a slider's value in the text's colour, not the theme's red (3.9:1 on the dark page)
DARK_TEXT_STYLE = """<style>
.stCode .token.comment, .stCode .token.prolog, .stCode .token.doctype, .stCode .token.cdata {
  color: #a3a8b8 !important; }
[data-testid="stSliderThumbValue"], [data-testid="stSliderThumbValue"] p { color: #fafafa !important; }
</style>"""
# every theme, one style for what Streamlit draws in a way WCAG AA does not accept:
# - focus: a keyboard's focus is never on something invisible (an element's toolbar, e.g. an image's Fullscreen
#   button, a chart's plotly buttons and a heading's link stay at opacity 0 until hovered, also while focused; shown
#   at once, no fade, so a focused control is drawn the moment it has the focus), the navigation's links show a
#   ring when focused, and so does a select box from the keyboard (Streamlit's own border goes when a pick reruns
#   the page, though the focus stays); the heading and the lesson banner that FOCUS_HEADING_JS focuses for a screen
#   reader are not controls: no ring;
# - reflow: nothing is cut at 320 px (400 % zoom of a 1280 px screen): Streamlit keeps a button's label, a page link's
#   text and a multiselect's chosen options on one line and cuts what does not fit;
# - headings: a view is one h1 then h2 sections (st.header), drawn at the size of Streamlit's h3, as they were.
PAGE_STYLE = """<style>
[data-testid="stElementToolbar"]:focus-within, .js-plotly-plot .modebar:focus-within,
.js-plotly-plot .modebar:focus-within .modebar-group, [data-testid="stHeaderActionElements"] a:focus {
  opacity: 1 !important; transition: none !important; }
[data-testid="stMain"] h1[tabindex="-1"]:focus, .st-key-lesson_banner [tabindex="-1"]:focus { outline: none; }
[data-testid="stSidebarNavLink"]:focus-visible, [data-testid="stPageLink-NavLink"]:focus-visible,
[data-testid="stSelectbox"] [role="group"]:has(input:focus-visible) {
  outline: 2px solid #0072B2 !important; outline-offset: 2px; }
[data-testid="stMain"] button [data-testid="stMarkdownContainer"],
[data-testid="stMain"] button [data-testid="stMarkdownContainer"] p { white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; }
[data-testid="stPageLink-NavLink"] span { white-space: normal !important; overflow: visible !important; }
[data-testid="stMultiSelectTagsContainer"] [data-tag], [data-testid="stMultiSelectTagsContainer"] [data-tag] > span {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  height: auto !important; }
[data-testid="stMain"] h2 { font-size: 1.75rem !important; }
</style>"""


def min_width_style(container_key: str, px: int) -> str:
    """A style for the container st.container(key=container_key): its chart keeps at least px of width and the
    container scrolls it sideways on a narrower screen (the page itself never scrolls sideways)."""
    box = f".st-key-{container_key}"
    return (f"<style>{box} {{ overflow-x: auto; }} "
            f"{box} > [data-testid=stElementContainer] {{ min-width: {px}px; }}</style>")


# a view opened from the navigation (or a link): the keyboard's focus moves to its heading, so that a screen reader
# says where it is; a lesson step (picked, or Previous / Next) moves it to the step's banner, which a screen reader
# then reads (step, title, question). Only from the page itself, a navigation link, the lesson's pills or the
# banner's own buttons: a box the visitor is typing in keeps its focus. Installed once per page (Streamlit runs an
# html element's script when it first draws it), it watches the address and the banner: a new view is a new path,
# its heading the first one whose text differs from the last view's (looked for during a minute after the address
# changes: a busy server can take many seconds to draw it); a new step is a banner whose text changed.
FOCUS_HEADING_JS = """<script>(() => {
  if (window.__focusHeadings) return;
  window.__focusHeadings = true;
  let path = null, before = null, until = 0, step = null;
  const fresh = sel => [...document.querySelectorAll(sel)].find(e => !e.closest('[data-stale=true]'));
  const movable = (a, banner) => !a || a === document.body || !!a.closest('[data-testid=stSidebarNavLink]')
    || !!a.closest('.st-key-lesson') || a.dataset.spoken === '1' || (banner && banner.contains(a));
  const take = e => { e.tabIndex = -1; e.dataset.spoken = '1'; e.focus({preventScroll: true}); };
  setInterval(() => {
    if (location.pathname !== path) { path = location.pathname; until = Date.now() + 60000; }
    const banner = fresh('.st-key-lesson_banner');
    const line = banner && banner.querySelector('[data-testid=stMarkdownContainer]');
    const said = line ? line.innerText : null;
    if (said !== step) {
      step = said;
      if (line && movable(document.activeElement, banner)) { take(line); until = 0; return; }
    }
    if (!until) return;
    const h = fresh('[data-testid=stMain] h1');
    if (!h || h.innerText === before) { if (Date.now() > until) until = 0; return; }
    until = 0;
    before = h.innerText;
    if (movable(document.activeElement, null)) take(h);
  }, 150);
})();
</script>"""
# presenter mode: the figure a lesson step's question points to, kept in view under the sticky question while the
# page draws (the figures above it may still grow for a few seconds), until the teacher scrolls, clicks or types
SCROLL_TO_LESSON_TARGET = """<script>(() => {
  const box = () => document.querySelector('.st-key-lesson_target');
  if (!window.__lessonTargetMoved) {  // once per page: any input of the teacher's ends the placing of this target
    window.__lessonTargetMoved = true;
    for (const kind of ['wheel', 'keydown', 'mousedown', 'touchstart']) {
      window.addEventListener(kind, () => { const b = box(); if (b) b.dataset.moved = '1'; }, {capture: true});
    }
  }
  const place = (tries) => {
    const b = box();
    if (b && b.querySelector('.js-plotly-plot')) {
      b.dataset.shown = b.dataset.shown || String(Date.now());
      if (b.dataset.moved || Date.now() - Number(b.dataset.shown) > 10000) return;
      const r = b.getBoundingClientRect();
      if (r.bottom > window.innerHeight + 1 || r.bottom < r.height) b.scrollIntoView({block: 'end'});
    }
    if (tries > 0) setTimeout(() => place(tries - 1), 250);
  };
  place(60);
})();
</script>"""

# the printable lesson: printing takes only the main column, grown to its full height (the app's own scroll
# container would cut it at one screen), each step kept on one page
PRINT_STYLE = """<style>
@media print {
  [data-testid="stSidebar"], [data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"],
  [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"], .modebar-container,
  .no-print { display: none !important; }
  html, body, [data-testid="stApp"], [data-testid="stAppViewContainer"], [data-testid="stMain"] {
    height: auto !important; overflow: visible !important; position: static !important; }
  [data-testid="stMainBlockContainer"] { padding: 0 !important; max-width: 100% !important; }
  [class*="st-key-print_step_"] { break-inside: avoid; page-break-inside: avoid; }
  .st-key-print_sheet { break-before: page; page-break-before: always; }
}
</style>"""


# 5. Public replacement: a validation hook for bound widgets' URL values (none in 1.67: a number input given
#    'inf' by a link raises OverflowError before any view code runs).
def refuse_endless_numbers() -> None:
    """Have Streamlit refuse a link's number that is not finite ('inf', 'NaN', '1e400', '-1e309', 10,000 digits)
    as it refuses any value a widget cannot take: the parameter is dropped and unused() reports it. Streamlit
    itself turns such a value into float infinity and gives it to an integer number_input, whose int() raises
    OverflowError before any view code runs. Wraps the pinned version's parse_url_param for numbers only (text
    widgets keep 'inf' as text); once per process."""
    parse = session_state.parse_url_param
    if getattr(parse, "refuses_endless", False):
        return

    def finite(value, value_type: str):
        parsed = parse(value, value_type)
        if value_type == "double_value" and isinstance(parsed, float) and not math.isfinite(parsed):
            raise ValueError(f"{parsed} is not a finite number")
        return parsed

    finite.refuses_endless = True
    session_state.parse_url_param = finite


# 6. Public replacement: an on-stop callback, or elements allowed after st.stop() (none in 1.67: st.stop() requests
#    the stop, and every element drawn after it is dropped, also in a `finally`).
_BEFORE_STOP = "_before_stop"


def before_stop(fn) -> None:
    """Have st.stop() call fn() first in this session's runs (None: no longer). st.stop is wrapped once per
    process; the hook lives in the session's state, so another session's stop never calls it."""
    _wrap_stop()
    if fn is None:
        st.session_state.pop(_BEFORE_STOP, None)
    else:
        st.session_state[_BEFORE_STOP] = fn


@functools.cache
def _wrap_stop() -> None:
    original = st.stop

    def stop():
        hook = st.session_state.pop(_BEFORE_STOP, None) if in_a_run() else None
        if hook is not None:
            hook()
        original()

    st.stop = stop


# 7. Public replacement: a page on st.rerun, or a rerun that cannot override a page the person picked (none in 1.67:
#    st.context.url is this run's address, not a waiting request's, and a rerun requested while another waits runs
#    the later request's page, so st.rerun() from a fragment run that began before the person's pick takes them back).
def page() -> str | None:
    """This run's page (its script hash, as st.navigation's pages have it); None outside a run."""
    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.page_script_hash


def next_page() -> str | None:
    """The page this session runs next: that of a whole-app rerun waiting for this run to yield (the person has just
    picked a page or changed a widget; '' when it names its page by address only), else this run's; None outside
    a run. A waiting rerun of fragments only runs this run's page. It does not say which elements that run draws."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return None
    requests = ctx.script_requests
    if requests is None:
        return ctx.page_script_hash
    with requests._lock:
        waiting = requests._rerun_data if requests._state == ScriptRequestType.RERUN else None
    if waiting is None or waiting.fragment_id or waiting.fragment_id_queue or waiting.is_fragment_scoped_rerun:
        return ctx.page_script_hash
    return waiting.page_script_hash
