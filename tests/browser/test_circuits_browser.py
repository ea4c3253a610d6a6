"""In a real Chromium: the Circuits view on a tiny word-level GPT-2 with the names task and a |score| threshold
paints its three figures; a click on a head's node in the circuit graph puts that head in the box, and its button
opens the Heads view at that head on the first pair's clean text."""
from urllib.parse import parse_qs, urlencode, urlparse

import models
from bench.browser import chromium, drawn, new_page, serve, visit
from experiments.circuits_task import names_pairs
from tests.data.names_gpt2 import save
from viz.circuits import NODES as NODE_TRACE


def test_a_click_on_a_head_node_opens_it_in_heads(tmp_path):
    folder = save(tmp_path / "gpt2")
    query = urlencode({"model": "hf:", "hf_spec": folder, "circ_task": "Names (indirect object)",
                       "circ_keep": "|score| ≥ threshold", "circ_threshold": "0.05"})
    with serve() as url, chromium() as browser:
        page = new_page(browser, 1400, 3000)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        visit(page, f"{url}/circuits?{query}")
        page.get_by_text("EAP against exact patching").wait_for(timeout=240_000)
        drawn(page, 120)
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 3", timeout=120_000)
        nodes = page.locator(".js-plotly-plot").first.locator("g.trace.scatter").last  # the nodes' trace, drawn last
        names = page.evaluate("() => document.querySelector('.js-plotly-plot').data"
                              f".find(t => t.name === {NODE_TRACE!r}).customdata")
        head = next(n for n in names if "H" in n and f"Open {n} " not in page.content())
        box = nodes.locator("path.point").nth(names.index(head)).bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.get_by_role("button", name=f"Open {head} in Heads").click(timeout=60_000)
        page.get_by_role("heading", name="Every head at a glance").wait_for(timeout=120_000)
        params = parse_qs(urlparse(page.url).query)
        assert (params["heads_layer"], params["heads_head"]) == ([head.split("H")[0]], ["H" + head.split("H")[1]])
        assert params["text"] == [names_pairs(models.load("hf:" + folder), 4)[0][0]]
        assert errors == []
