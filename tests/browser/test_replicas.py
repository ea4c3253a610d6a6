"""Two replicas behind nginx (deploy/nginx.conf, started by bench.replicas, nginx installed if missing): real
browsers get sticky sessions over the proxied websocket, each sees only its own text, and a long share link
fits nginx's header buffers. The 30-student run is the benchmark (python -m bench.load)."""
import urllib.parse

import pytest

from bench.browser import COUNT_RUNS_JS, OVERVIEW_ROWS_JS, chromium, new_page, wait_run
from bench.replicas import cluster, nginx_config

pytestmark = pytest.mark.slow
WORDS = ["dog", "river", "music"]


def test_the_shipped_config_is_only_rewritten_in_ports():
    text = nginx_config([1111, 2222], 3333)
    assert "server 127.0.0.1:1111;\n        server 127.0.0.1:2222;\n" in text and "8501" not in text
    assert "hash $sticky_key consistent;" in text and "proxy_set_header Upgrade $http_upgrade;" in text
    assert "large_client_header_buffers 4 64k;" in text and "listen 127.0.0.1:3333;" in text
    assert "pid nginx.pid;" in text and "proxy_temp_path proxy_temp;" in text  # under the prefix, as shipped


def test_sessions_through_nginx_are_sticky_and_separate():
    with cluster(replicas=2) as c, chromium() as browser:
        contexts = [browser.new_context(viewport={"width": 1100, "height": 800}) for _ in WORDS]
        pages = []
        for ctx, word in zip(contexts, WORDS):
            page = ctx.new_page()
            page.add_init_script(COUNT_RUNS_JS)
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("http://127.0.0.1")
                       else route.abort())
            query = urllib.parse.urlencode({"text": f"Only the {word} is here."})
            page.goto(f"{c.url}/heads?{query}")
            pages.append(page)
        for page, word, ctx in zip(pages, WORDS, contexts):
            page.get_by_text("Every head at a glance").wait_for(timeout=180_000)
            page.wait_for_function(f"() => ({OVERVIEW_ROWS_JS})() > 0", timeout=180_000)
            wait_run(page, 0, timeout_s=180)
            assert page.locator("[data-testid=stException]").count() == 0
            labels = page.evaluate("() => JSON.stringify(document.querySelector('.js-plotly-plot').data[0].y)")
            assert word in labels and not [w for w in WORDS if w != word and w in labels]
            cookies = {k["name"]: k["value"] for k in ctx.cookies()}
            assert cookies.get("ae_replica"), "nginx set no sticky cookie"
            page.reload()  # a reload keeps the cookie, so it reaches the same replica and works again
            page.get_by_text("Every head at a glance").wait_for(timeout=180_000)
            assert {k["name"]: k["value"] for k in ctx.cookies()}["ae_replica"] == cookies["ae_replica"]


def test_a_share_link_with_the_longest_hosted_text_passes_the_proxy():
    import limits

    text = ("é<&> " * limits.HOSTED.text_chars)[:limits.HOSTED.text_chars]  # ~12 KB once percent-encoded
    with cluster(replicas=1) as c, chromium() as browser:
        page = new_page(browser)
        response = page.goto(f"{c.url}/heads?" + urllib.parse.urlencode({"text": text}))
        assert response.status == 200
        page.get_by_text("Every head at a glance").wait_for(timeout=180_000)
        wait_run(page, 0, timeout_s=180)
        assert page.get_by_label("Text", exact=True).input_value() == text
