"""WCAG 2.1 AA as a browser measures it: axe-core (bundled, offline) on every view with its explanations open, in
laptop, presenter and hosted modes and in the dark theme; every chart named for a screen reader; chart text at 4.5:1
or more on its page; a title per view, one h1 then h2 sections; nothing cut or scrolled sideways at 320 px."""
from axe_playwright_python.sync_playwright import Axe

from bench.browser import chromium, new_page, serve, views, visit

WCAG_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
           "resultTypes": ["violations"]}
CHARTS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g => {
  const named = g.closest('[aria-label]');
  return named ? named.getAttribute('aria-label') : '';
})"""
# every text of a chart but the numbers in its cells (plotly picks those against each cell): [fill, text]
CHART_TEXT_JS = """() => [...document.querySelectorAll('.js-plotly-plot text')]
  .filter(t => t.textContent.trim() && !t.closest('.textpoint, .heatmaplayer, .barlayer'))
  .map(t => [getComputedStyle(t).fill, t.textContent.trim().slice(0, 30)])"""


# the levels of the main column's headings, in order (a view: one h1, then h2 sections, h3 inside them)
HEADINGS_JS = """() => [...document.querySelectorAll('[data-testid=stMain] :is(h1, h2, h3, h4, h5, h6)')]
  .map(h => +h.tagName[1])"""
PAGE_BACKGROUND_JS = "() => getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor"


def _luminance(rgb: str) -> float:
    parts = [float(v) / 255 for v in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3]]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in parts]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(rgb: str, background: str = "rgb(255, 255, 255)") -> float:
    """WCAG's contrast ratio of two CSS colours, 1 to 21."""
    a, b = sorted((_luminance(rgb), _luminance(background)))
    return (b + 0.05) / (a + 0.05)


def audit(page, where: str) -> None:
    """Open every explanation and table fold, then: no serious or critical axe violation, every chart named with a
    sentence, every chart text at 4.5:1 or more on the page's background, one h1 and no heading level skipped."""
    for fold in page.locator("[data-testid=stExpander] summary").all():
        if fold.is_visible():
            fold.click()
    page.wait_for_timeout(500)
    found = Axe().run(page, options=WCAG_AA).response["violations"]
    bad = [(v["id"], v["impact"], [n["target"] for n in v["nodes"][:3]]) for v in found
           if v["impact"] in ("serious", "critical")]
    assert not bad, f"{where}: {bad}"
    names = page.evaluate(CHARTS_JS)
    assert all(len(n) > 20 for n in names), f"{where}: a chart without a sentence: {names}"
    background = page.evaluate(PAGE_BACKGROUND_JS)
    faint = {(fill, text) for fill, text in page.evaluate(CHART_TEXT_JS) if contrast(fill, background) < 4.5}
    assert not faint, f"{where}: chart text under 4.5:1 on {background}: {sorted(faint)[:5]}"
    levels = page.evaluate(HEADINGS_JS)
    assert levels[:1] == [1] and levels.count(1) == 1, f"{where}: headings {levels}"
    assert all(b <= a + 1 for a, b in zip(levels, levels[1:])), f"{where}: a heading level skipped: {levels}"


def test_every_view_meets_wcag_aa_in_a_browser():
    with serve(timeout_s=120) as url, chromium() as browser:
        page = new_page(browser)
        named = 0
        for path, title, _ in views():
            stem = path.rsplit("/", 1)[-1].removesuffix(".py")
            visit(page, f"{url}/{'' if stem == 'home' else stem}")
            assert page.title() == ("Attention Explorer" if stem == "home" else f"{title} · Attention Explorer")
            audit(page, stem)
            named += len(page.evaluate(CHARTS_JS))
        assert named > 30  # the views drew their charts: the checks above were not run on empty pages
        for path in ("heads?lesson=2", "next_token?lesson=9", "patching"):  # on a projector
            visit(page, f"{url}/{path}{'&' if '?' in path else '?'}presenter=true")
            audit(page, f"presenter {path}")


def test_the_dark_theme_meets_wcag_aa():
    """A visitor whose system asks for dark pages gets Streamlit's dark theme: its code, captions and chart text
    are measured on the dark background."""
    with serve(timeout_s=120) as url, chromium() as browser:
        context = browser.new_context(color_scheme="dark")
        page = new_page(context)
        for path in ("heads", "next_token", "sinks", "attribution", "patching", "kv_cache", "classroom", "graph"):
            visit(page, f"{url}/{path}")
            assert contrast(page.evaluate(PAGE_BACKGROUND_JS)) > 10, "the dark theme is on"
            audit(page, f"dark {path}")


# what the page cuts (a label kept on one line, its end hidden) in the main column, charts, tables and code aside
CUT_JS = """() => [...document.querySelectorAll('[data-testid=stMain] *')].filter(e => {
  if (e.closest('.js-plotly-plot, [data-testid=stDataFrame], [data-testid=stCode], .katex, iframe')) return false;
  const s = getComputedStyle(e);
  if (!['hidden', 'clip'].includes(s.overflowX) && s.textOverflow !== 'ellipsis') return false;
  return e.scrollWidth > e.clientWidth + 1 && e.innerText && e.innerText.trim();
}).map(e => e.innerText.trim().slice(0, 60))"""
SIDEWAYS_JS = "() => document.documentElement.scrollWidth"


def test_every_view_reflows_at_320_px():
    """400 % zoom on a 1280 px screen is a 320 px wide page (WCAG 1.4.10): no view scrolls sideways or cuts a
    label; the Heads overview keeps its head labels and scrolls inside its own box."""
    with serve(timeout_s=120) as url, chromium() as browser:
        page = new_page(browser, width=320, height=1200)
        for path, _, _ in views():
            stem = path.rsplit("/", 1)[-1].removesuffix(".py")
            visit(page, f"{url}/{'' if stem == 'home' else stem}")
            assert page.evaluate(SIDEWAYS_JS) <= 320, f"{stem} scrolls sideways"
            assert not page.evaluate(CUT_JS), f"{stem}: cut at 320 px: {page.evaluate(CUT_JS)[:3]}"
        visit(page, f"{url}/heads")
        overview = page.locator("[class*=st-key-wide_heads_overview]")
        assert overview.evaluate("e => e.scrollWidth > e.clientWidth")  # the figure scrolls, not the page
        labels = page.locator("[class*=st-key-wide_heads_overview] .xtick text").all_text_contents()
        assert [f"H{h}" for h in range(12)] == labels
        audit(page, "heads at 320 px")


def test_hosted_views_meet_wcag_aa():
    with serve(timeout_s=120, env={"ATTENTION_EXPLORER_HOSTED": "1"}) as url, chromium() as browser:
        page = new_page(browser)
        for path in ("heads", "classroom", "attribution", "kv_cache"):
            visit(page, f"{url}/{path}")
            audit(page, f"hosted {path}")


FOCUSED_JS = """() => { const e = document.activeElement; if (!e || e === document.body) return null;
  let opacity = 1;
  for (let n = e; n && n.nodeType === 1; n = n.parentElement) opacity = Math.min(opacity, +getComputedStyle(n).opacity);
  const r = e.getBoundingClientRect(), s = getComputedStyle(e);
  return {name: (e.getAttribute('aria-label') || e.innerText || e.tagName).trim().slice(0, 40), opacity,
          area: r.width * r.height, ring: s.outlineStyle !== 'none' || s.boxShadow !== 'none',
          nav: !!e.closest('[data-testid=stSidebarNavLink], [data-testid=stPageLink-NavLink]')}; }"""


# every control the keyboard can reach, focused one by one: the names of those not drawn while focused (opacity 0
# on the element or a parent, or no area) at once, with no wait for a fade
NOT_DRAWN_WHEN_FOCUSED_JS = """() => [...document.querySelectorAll('a, button, input, select, textarea, [tabindex]')]
  .filter(e => e.tabIndex >= 0 && getComputedStyle(e).visibility !== 'hidden').filter(e => {
    e.focus();
    if (document.activeElement !== e) return false;
    let opacity = 1;
    for (let n = e; n && n.nodeType === 1; n = n.parentElement)
      opacity = Math.min(opacity, +getComputedStyle(n).opacity);
    const r = e.getBoundingClientRect();
    return opacity === 0 || r.width * r.height === 0;
  }).map(e => (e.getAttribute('aria-label') || e.getAttribute('data-title') || e.innerText || e.tagName).trim())"""


def test_no_keyboard_stop_is_invisible_and_links_show_their_focus():
    """Home (its links; the thumbnails it had were focusable at opacity 0), Heads and Graph (plotly's buttons and
    the headings' links were too): every control is drawn the moment it has the focus, whichever way the walk
    starts; a Tab walk reaches over 40 of them, all drawn, and the navigation's links get a focus ring."""
    with serve(timeout_s=120) as url, chromium() as browser:
        page = new_page(browser)
        for path in ("", "heads", "graph"):
            visit(page, f"{url}/{path}")
            hidden = page.evaluate(NOT_DRAWN_WHEN_FOCUSED_JS)
            assert not hidden, f"{path or 'home'}: focus on something not drawn: {hidden[:5]}"
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
            stops = []
            for _ in range(70):
                page.keyboard.press("Tab")
                page.wait_for_timeout(30)
                stops.append(page.evaluate(FOCUSED_JS))
            stops = [s for s in stops if s]
            assert len(stops) > 40
            hidden = [s["name"] for s in stops if s["opacity"] == 0 or s["area"] == 0]
            assert not hidden, f"{path or 'home'}: focus on something not drawn: {hidden[:5]}"
            links = [s for s in stops if s["nav"]]
            assert links and all(s["ring"] for s in links), f"{path or 'home'}: {links[:3]}"


HEADING_FOCUSED_JS = """() => { const e = document.activeElement;
  return e && e.tagName === 'H1' && !!e.closest('[data-testid=stMain]') ? e.innerText.trim() : null; }"""


def test_a_view_opened_from_the_navigation_takes_the_focus_to_its_heading():
    from bench.browser import open_view

    with serve(timeout_s=120) as url, chromium() as browser:
        page = new_page(browser)
        visit(page, url)
        page.wait_for_function(HEADING_FOCUSED_JS, timeout=60_000)  # a fresh page too
        for title in ("Heads", "Graph"):
            open_view(page, title)
            page.wait_for_function(HEADING_FOCUSED_JS, timeout=60_000)
            assert page.evaluate(HEADING_FOCUSED_JS) == page.locator("[data-testid=stMain] h1").first.inner_text()
        box = page.get_by_label("Text", exact=True)  # typing is never interrupted: a focused box keeps its focus
        box.focus()
        page.wait_for_timeout(1500)
        assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Text"
