"""In a real Chromium: the Circuits view on the date model `seq2seq-transformer` (its built-in task) paints the
circuit graph with the encoder's, the decoder's and the cross-attention's nodes; a click on a cross-attention head's
node puts that head in the box, and its button opens the Heads view at that head's cross-attention."""
from urllib.parse import parse_qs, urlparse

from bench.browser import chromium, drawn, new_page, page_state, runs, serve, settle, visit
from data.circuit_tasks import years
from ui.family import PART_LABELS

NODES_JS = """() => {
    const fig = document.querySelector('.js-plotly-plot');
    return fig.data.find(t => t.name === 'heads, MLPs, embedding and logits').customdata;
}"""


def test_a_click_on_a_cross_attention_node_opens_it_in_heads():
    with serve() as url, chromium() as browser:
        page = new_page(browser, 1400, 3000)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        visit(page, f"{url}/circuits?model=seq2seq-transformer")
        page.get_by_text("EAP against exact patching").wait_for(timeout=240_000)
        drawn(page, 120)
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 3", timeout=120_000)
        names = page.evaluate(NODES_JS)
        assert {n.split(".")[0] for n in names} == {"enc", "dec", "cross", "logits"}
        head = next(n for n in names if n.startswith("cross.") and f"Open {n} " not in page.content())
        nodes = page.locator(".js-plotly-plot").first.locator("g.trace.scatter").last
        box = nodes.locator("path.point").nth(names.index(head)).bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        before = runs(page)
        page.get_by_role("button", name=f"Open {head} in Heads").click(timeout=60_000)
        page.get_by_role("heading", name="Every head at a glance").wait_for(timeout=120_000)
        settle(page, before)  # the link is read once Heads' run has ended: the heading comes before its widgets
        params = parse_qs(urlparse(page.url).query)
        layer, h = head.removeprefix("cross.").split("H")
        assert (params["heads_layer"], params["heads_head"]) == ([layer], ["H" + h])
        assert params["text"] == [years(1)[0][0]]
        # cross-attention, Heads' default part for an encoder-decoder, so its link leaves heads_part out once it has run
        assert PART_LABELS["cross"] in page_state(page)["checked"] and params.get("heads_part") in (
            None, [PART_LABELS["cross"]])
        assert errors == []
