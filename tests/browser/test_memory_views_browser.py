"""One server, one browser session, every view of the menu opened once with its defaults: the server's resident
memory stays under the issue's 1 GB. The server starts as `make run` and every replica start it (two glibc arenas,
bench.browser.ALLOCATOR): 0.93 GB without them and 0.86 GB with them on a 2-core AVX2 machine (bench cold_start's
figure, 25 views). The failure names the views that added the most (Examples, which waits for the warm-up's
torch, transformers and MiniLM, then Attribution, Lesson to print and Pruning), as bench cold_start's per_view
measures them."""
from bench.browser import chromium, new_page, rss_bytes, serve, views, wait_run
from bench.cold_start import visit_every_view

LIMIT = 1_000_000_000


def test_every_view_visited_once_leaves_the_server_inside_a_replica_budget(tmp_path):
    with serve(stats=tmp_path / "stores.json") as url, chromium() as browser:
        page = new_page(browser)
        page.goto(url)
        page.get_by_role("heading", name="Attention Explorer").wait_for(timeout=120_000)
        wait_run(page, 0)
        per_view = visit_every_view(page, url)
        rss = rss_bytes(url.pid)
    assert len(per_view) == len(views())
    assert all(v["store_bytes"] >= 0 for v in per_view.values())
    largest = sorted(per_view.items(), key=lambda item: -item[1]["rss_delta_bytes"])[:5]
    assert rss < LIMIT, (f"server RSS {rss / 1e9:.2f} GB after {len(per_view)} views; added the most: "
                         + ", ".join(f"{view} {v['rss_delta_bytes'] / 1e6:.0f} MB" for view, v in largest))
