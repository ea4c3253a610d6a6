"""8 browser sessions at once against one server: each sees only its own sentence, none errors, RSS < 1.5 GB.

One Chromium, eight pages (separate Streamlit sessions), driven from one thread: every sentence is
submitted before any result is awaited, so the server works on all eight at the same time. Each
session's word must be in its own heads overview (the figure's tick labels) and in no other.
"""
import json

import pytest

from bench.browser import chromium, new_page, rss_bytes, runs, serve, submit_text, wait_run

WORDS = ["dog", "river", "music", "bread", "snow", "train", "garden", "money"]
FIGURE_JS = "() => JSON.stringify([...document.querySelectorAll('.js-plotly-plot')].map(g => [g.data, g.layout]))"
RSS_LIMIT = 1.5e9


def test_eight_sessions_each_see_only_their_own_text():
    with serve() as url, chromium() as browser:
        pages = [new_page(browser, width=1100, height=800) for _ in WORDS]
        for page in pages:
            page.goto(url + "/heads")
        for page in pages:
            wait_run(page, 0, timeout_s=120)  # the first run has finished: the next one is the text's
        started = [runs(page) for page in pages]
        for i, (page, word) in enumerate(zip(pages, WORDS)):
            submit_text(page, f"Session {i} only talks about the {word} here.")
        seen = {}
        for page, word, before in zip(pages, WORDS, started):
            wait_run(page, before, timeout_s=120)
            page.get_by_text("tokens ·").first.wait_for(timeout=30_000)
            assert page.locator("[data-testid=stException]").count() == 0, word
            assert page.locator("[data-testid=stAlert]").count() == 0, word
            seen[word] = json.loads(page.evaluate(FIGURE_JS))
        rss = rss_bytes(url.pid)
    for word, figures in seen.items():
        labels = json.dumps(figures)
        assert f'"{word}"' in labels, f"{word}: its own token is not in its figures"
        others = [w for w in WORDS if w != word and f'"{w}"' in labels]
        assert not others, f"{word}: sees another session's text: {others}"
    assert rss < RSS_LIMIT, f"server RSS {rss / 1e9:.2f} GB"


@pytest.mark.slow
def test_sessions_opening_a_cold_server_at_once_see_no_import_errors():
    # the first-visit race: every view's first run on a fresh server, six sessions at once (ui/runtime/warm.py)
    views = ["graph", "compare", "heads", "positional", "bpe", "seq2seq"]
    with serve(timeout_s=120) as url, chromium() as browser:
        pages = [new_page(browser, width=1100, height=800) for _ in views]
        for page, view in zip(pages, views):
            page.goto(f"{url}/{view}", wait_until="commit")
        for page, view in zip(pages, views):
            page.locator("[data-testid=stSidebar]").wait_for(timeout=180_000)
            wait_run(page, 0, timeout_s=240)
            errors = page.locator("[data-testid=stException]").all_inner_texts()
            assert not errors, f"{view}: {errors}"
