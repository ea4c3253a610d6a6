"""WCAG 2.1 AA as a browser measures it: axe-core (bundled, offline) on every view with its explanations open, in
laptop, presenter and hosted modes; every chart named for a screen reader; chart text at 4.5:1 or more on its page;
a title per view."""
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


def _luminance(rgb: str) -> float:
    parts = [float(v) / 255 for v in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3]]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in parts]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast_on_white(rgb: str) -> float:
    return 1.05 / (_luminance(rgb) + 0.05)


def audit(page, where: str) -> None:
    """Open every explanation and table fold, then: no serious or critical axe violation, every chart named with a
    sentence, every chart text at 4.5:1 or more."""
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
    faint = {(fill, text) for fill, text in page.evaluate(CHART_TEXT_JS) if contrast_on_white(fill) < 4.5}
    assert not faint, f"{where}: chart text under 4.5:1 on white: {sorted(faint)[:5]}"


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


def test_no_keyboard_stop_is_invisible_and_links_show_their_focus():
    """Tab through Home (its thumbnails' Fullscreen buttons were focusable at opacity 0) and Heads: every stop is
    drawn, and the navigation's links get a focus ring."""
    with serve(timeout_s=120) as url, chromium() as browser:
        page = new_page(browser)
        for path in ("", "heads"):
            visit(page, f"{url}/{path}")
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
        page.wait_for_function(HEADING_FOCUSED_JS, timeout=20_000)  # a fresh page too
        for title in ("Heads", "Graph"):
            open_view(page, title)
            page.wait_for_function(HEADING_FOCUSED_JS, timeout=20_000)
            assert page.evaluate(HEADING_FOCUSED_JS) == page.locator("[data-testid=stMain] h1").first.inner_text()
        box = page.get_by_label("Text", exact=True)  # typing is never interrupted: a focused box keeps its focus
        box.focus()
        page.wait_for_timeout(1500)
        assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Text"
